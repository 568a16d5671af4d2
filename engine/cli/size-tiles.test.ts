// The CLI's size check sizes the tile each algorithm's pass runs (passBlocks), not a tile
// sized from the on-chip memory: FA3 runs its own 128 × 176 tile at d = 128, so its trace is a
// fifth of what 8 × 8 memory-sized tiles would write.

import { describe, expect, it } from 'vitest';
import { parseArgs } from './args.ts';
import { PROBLEM_OPTIONS, problemFromArgs, RANDOM_OPTIONS } from './problem-options.ts';

const args = (...argv: string[]) => parseArgs(argv, { ...PROBLEM_OPTIONS, ...RANDOM_OPTIONS, 'max-bytes': 'int' });
const trace = { command: 'trace' as const, maxBytes: 200_000_000, algos: 1, backward: false };
const shape = ['--nq', '1024', '--d', '128', '--dtype', 'bf16'];

describe('trace size check on the tile the pass runs', () => {
  it('admits an FA3 trace of about 80 MB under a 200 MB limit', async () => {
    const { problem } = await problemFromArgs(args('--algo', 'fa3', ...shape), true, trace);
    expect(problem).toMatchObject({ nq: 1024, nk: 1024, d: 128 });
  });
  it('refuses FA2 on the same problem: its memory-sized 8 × 8 tiles write about 450 MB', async () => {
    await expect(problemFromArgs(args('--algo', 'fa2', ...shape), true, trace)).rejects.toThrow(/this trace would need about/);
  });
  it('sizes several algorithms by the largest trace among them', async () => {
    await expect(problemFromArgs(args('--algo', 'fa3,fa2', ...shape), true, { ...trace, algos: 2 })).rejects.toThrow(/this trace/);
    await expect(problemFromArgs(args('--algo', 'fa3', ...shape, '--block-m', '8', '--block-n', '8'), true, trace)).rejects.toThrow(
      /this trace/,
    );
  });
});
