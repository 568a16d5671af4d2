import { describe, expect, it } from 'vitest';
import { type Axis, axisLength, axisTile, stepRect, type TileGeometry } from './tile-geometry.ts';

// A 40 × 72 head with d 32, dv 16 on 16 × 24 tiles, the step on rows 32–40 (the ragged last
// Q tile) against keys 24–48.
const AXES: Axis[] = ['q', 'k', 'd', 'dv', 'one'];
const g: TileGeometry = { nq: 40, nk: 72, d: 32, dv: 16, blockM: 16, blockN: 24, rows: [32, 40], cols: [24, 48] };

describe('tile geometry of a heatmap named by its axes', () => {
  it('sizes and tiles each axis from the head and the run tile', () => {
    expect(AXES.map((a) => axisLength(g, a))).toEqual([40, 72, 32, 16, 1]);
    expect(AXES.map((a) => axisTile(g, a))).toEqual([16, 24, 32, 16, 1]);
  });
  it("outlines the step's rows, keys, or both, across the whole of a head-dim axis", () => {
    expect(stepRect(g, 'q', 'k')).toEqual({ r0: 32, r1: 40, c0: 24, c1: 48 });
    expect(stepRect(g, 'q', 'd')).toEqual({ r0: 32, r1: 40, c0: 0, c1: 32 });
    expect(stepRect(g, 'd', 'k')).toEqual({ r0: 0, r1: 32, c0: 24, c1: 48 });
    expect(stepRect(g, 'k', 'dv')).toEqual({ r0: 24, r1: 48, c0: 0, c1: 16 });
    expect(stepRect(g, 'q', 'one')).toEqual({ r0: 32, r1: 40, c0: 0, c1: 1 });
  });
  it('outlines nothing on a map whose rows or keys the step does not touch', () => {
    const noKeys: TileGeometry = { ...g, cols: [0, 0] };
    expect(stepRect(noKeys, 'q', 'k')).toBeUndefined();
    expect(stepRect(noKeys, 'k', 'd')).toBeUndefined();
    expect(stepRect(noKeys, 'q', 'dv')).toEqual({ r0: 32, r1: 40, c0: 0, c1: 16 });
  });
});
