import { describe, expect, it } from 'vitest';
import { heatmapSize } from './heatmap-size.ts';

describe('heatmapSize', () => {
  it('draws a thin matrix (Q at N = 384, d = 16) with a readable short side and every one of its columns', () => {
    const q = heatmapSize(384, 16, 250);
    expect(q.height).toBe(250);
    expect(q.width).toBe(64);
    expect(q.kc).toBe(1);
    // The long side has under a pixel per row: every other row, as nearest-neighbour scaling would show.
    expect(q.kr).toBe(2);
  });

  it('keeps square cells where both sides are readable', () => {
    expect(heatmapSize(64, 64, 250)).toEqual({ width: 250, height: 250, kr: 1, kc: 1 });
    expect(heatmapSize(32, 16, 160)).toEqual({ width: 80, height: 160, kr: 1, kc: 1 });
  });

  it('samples a large matrix on both axes alike', () => {
    const s = heatmapSize(2748, 2748, 690);
    expect(s.kr).toBe(s.kc);
    expect(Math.ceil(2748 / s.kr)).toBeLessThanOrEqual(690);
  });

  it('gives a one-column vector (D) the least width', () => {
    expect(heatmapSize(32, 1, 160).width).toBe(24);
  });
});
