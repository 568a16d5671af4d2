import { describe, expect, it } from 'vitest';
import { paneDifferences } from './pane-differences.ts';

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
});
