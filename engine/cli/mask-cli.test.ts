import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { describeCommand } from './hw-describe.ts';
import { traceCommand } from './trace-command.ts';

function capture(): { out: string[] } {
  const out: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((s: unknown) => void out.push(String(s)));
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  return { out };
}

afterEach(() => vi.restoreAllMocks());

async function qkTiles(args: string[]): Promise<number[]> {
  const file = join(mkdtempSync(join(tmpdir(), 'mask-cli-')), 'trace.jsonl');
  await traceCommand.run([...args, '--out', file]);
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"kind":"qk"'))
    .map((l) => JSON.parse(l).tile.kvBlock as number);
}

describe('--mask-mod / --score-mod', () => {
  it('trace skips the K/V tiles a document mask empties', async () => {
    const base = ['--algo', 'fa2', '--nq', '48', '--d', '8', '--block-m', '16', '--block-n', '16'];
    capture();
    expect(await qkTiles(base)).toHaveLength(9);
    // Documents [0, 16) and [16, 48): the (0, 1), (0, 2), (1, 0), (2, 0) tile pairs are empty.
    expect(await qkTiles([...base, '--mask-mod', 'document:16'])).toEqual([0, 1, 2, 1, 2]);
  });

  it('trace refuses mask text with the column of the mistake', async () => {
    capture();
    await expect(traceCommand.run(['--algo', 'fa2', '--nq', '16', '--mask-mod', 'q_idx >= kv_idx &&'])).rejects.toThrow(
      /^mask.maskMod: column \d+: /,
    );
    await expect(traceCommand.run(['--algo', 'fa2', '--nq', '16', '--mask-mod', 'alibi'])).rejects.toThrow(/'alibi' is a score_mod preset/);
  });

  it("describe adds the block mask at the schedule's tiles", async () => {
    const c = capture();
    const code = await describeCommand.run(['--algo', 'fa3', '--gpu', 'h100', '--nq', '1024', '--d', '128', '--mask-mod', 'causal']);
    expect(code).toBe(0);
    const sheet = JSON.parse(c.out.join('\n'));
    const { block_m: bm, block_n: bn, empty, partial, full } = sheet.block_mask;
    expect([bm, bn]).toEqual([sheet.tiles.block_m, sheet.tiles.block_n]);
    expect(empty + partial + full).toBe(Math.ceil(1024 / bm) * Math.ceil(1024 / bn));
    expect(empty).toBeGreaterThan(0);
  });
});
