// The registry of CLI commands: one line per command module.

import type { CliCommand } from './command.ts';

export const COMMANDS: CliCommand[] = [];
