// The CLI run inside the calling process, for tests: what `node engine/cli/main.ts …` would
// print and exit with, without a Node start-up and a module graph load per command.

import { runCli } from './dispatch.ts';

export interface CapturedRun {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs one command (argv as after `main.ts`); console.log and console.error are kept, not printed. */
export async function runCliCaptured(argv: string[]): Promise<CapturedRun> {
  const out: string[] = [];
  const err: string[] = [];
  const { log, error } = console;
  console.log = (...a: unknown[]) => void out.push(a.join(' '));
  console.error = (...a: unknown[]) => void err.push(a.join(' '));
  try {
    const status = await runCli(argv);
    return { status, stdout: out.map((l) => `${l}\n`).join(''), stderr: err.map((l) => `${l}\n`).join('') };
  } finally {
    console.log = log;
    console.error = error;
  }
}
