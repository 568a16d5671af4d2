import { describe, expect, it } from 'vitest';
import { blockMean } from './downsample.ts';

describe('blockMean', () => {
  it('averages whole blocks and keeps small matrices as they are', () => {
    const src = Float32Array.from({ length: 6 * 4 }, (_, i) => i);
    const same = blockMean(src, 6, 4, 128, 128);
    expect([same.rows, same.cols, same.rowBlock]).toEqual([6, 4, 1]);
    expect(Array.from(same.data)).toEqual(Array.from(src));
    const g = blockMean(src, 6, 4, 3, 2);
    expect([g.rows, g.cols, g.rowBlock, g.colBlock]).toEqual([3, 2, 2, 2]);
    // cell (0,0) = mean of rows 0-1, cols 0-1 = (0 + 1 + 4 + 5) / 4
    expect(g.data[0]).toBe(2.5);
    expect(g.data[5]).toBe((18 + 19 + 22 + 23) / 4);
  });
  it('averages a short last block over the elements it holds', () => {
    const g = blockMean(Float32Array.from([1, 2, 3, 4, 5]), 5, 1, 2, 1);
    expect(Array.from(g.data)).toEqual([2, 4.5]);
  });
});
