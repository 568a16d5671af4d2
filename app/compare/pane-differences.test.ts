import { describe, expect, it } from 'vitest';
import { paneDifferences, sameTilesPlan } from './pane-differences.ts';

describe('what the compare panes differ in', () => {
  it('names each pane tile, dtype and GPU when they differ', () => {
    const d = paneDifferences([
      { pane: 1, tile: [16, 16], dtype: 'fp16', gpu: 'A100' },
      { pane: 2, tile: [128, 128], dtype: 'fp8e4m3', gpu: 'H100' },
    ]);
    expect(d.tilesDiffer).toBe(true);
    expect(d.lines).toHaveLength(3);
    expect(d.lines[0]).toContain('Tiles differ (pane 1 16×16, pane 2 128×128)');
    expect(d.lines[1]).toContain('Input precision differs (pane 1 fp16, pane 2 fp8e4m3)');
    expect(d.lines[2]).toContain('different GPUs (pane 1 A100, pane 2 H100)');
  });

  it('says so when only the algorithm differs; a pane without a hardware model does not count as another GPU', () => {
    const d = paneDifferences([
      { pane: 1, tile: [64, 64], dtype: 'fp16' },
      { pane: 3, tile: [64, 64], dtype: 'fp16', gpu: 'H100' },
    ]);
    expect(d.tilesDiffer).toBe(false);
    expect(d.lines).toEqual(['Same tiles (64×64), dtype and GPU in every pane: the columns differ by algorithm and switches only.']);
  });

  it('"Same tiles": free panes take the kernel pane\'s tile, the kernel pane keeps its own and the note says why', () => {
    const plan = sameTilesPlan([
      { pane: 1, tile: [16, 16], dtype: 'fp16' },
      { pane: 2, tile: [128, 128], dtype: 'fp16', kernelTile: [128, 128], name: 'FA4' },
      { pane: 3, tile: [32, 16], dtype: 'fp16' },
    ]);
    expect(plan.target).toEqual([128, 128]);
    expect(plan.tiles).toEqual([
      [128, 128],
      [128, 128],
      [128, 128],
    ]);
    expect(plan.changes).toBe(true);
    expect(plan.note).toContain('pane 2: FA4 at 128×128');
    expect(plan.note).not.toContain('cannot all share');
  });

  it('"Same tiles": two kernels with tiles of their own keep them, and the note says the panes cannot all share one', () => {
    const plan = sameTilesPlan([
      { pane: 1, tile: [128, 176], dtype: 'fp16', kernelTile: [128, 176], name: 'FA3' },
      { pane: 2, tile: [64, 64], dtype: 'fp16', kernelTile: [64, 64], name: 'fmha_v2' },
    ]);
    expect(plan.tiles).toEqual([
      [128, 176],
      [64, 64],
    ]);
    expect(plan.changes).toBe(false);
    expect(plan.note).toContain('cannot all share one');
  });

  it('"Same tiles" without kernels: every pane takes pane 1\'s tile and nothing is kept', () => {
    const plan = sameTilesPlan([
      { pane: 1, tile: [16, 16], dtype: 'fp32' },
      { pane: 2, tile: [64, 64], dtype: 'fp32' },
    ]);
    expect(plan.tiles).toEqual([
      [16, 16],
      [16, 16],
    ]);
    expect(plan.note).toBe('');
  });
});
