// The registry of CLI commands: one line per command module.

import type { CliCommand } from './command.ts';
import { runCommand } from './run-command.ts';
import { traceCommand } from './trace-command.ts';

export const COMMANDS: CliCommand[] = [runCommand, traceCommand];
