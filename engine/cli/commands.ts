// The registry of CLI commands: one line per command module.

import type { CliCommand } from './command.ts';
import { runCommand } from './run-command.ts';
import { traceCommand } from './trace-command.ts';
import { describeCommand } from './hw-describe.ts';
import { simulateCommand } from './hw-simulate.ts';

export const COMMANDS: CliCommand[] = [runCommand, traceCommand, describeCommand, simulateCommand];
