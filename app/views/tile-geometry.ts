// Where a heatmap's axes lie on the run's tiling: each axis names the extent it spans (query
// rows, keys, head dims, or a single column), from which its length, its tile and the current
// step's part of it follow.

import type { Rect } from './Heatmap.tsx';

/** The extent an axis of a heatmap spans. */
export type Axis = 'q' | 'k' | 'd' | 'dv' | 'one';

/** The head's extents, the run's tile and the current step's query rows and keys. */
export interface TileGeometry {
  nq: number;
  nk: number;
  d: number;
  dv: number;
  blockM: number;
  blockN: number;
  rows: readonly [number, number];
  cols: readonly [number, number];
}

export function axisLength(g: TileGeometry, a: Axis): number {
  return a === 'q' ? g.nq : a === 'k' ? g.nk : a === 'd' ? g.d : a === 'dv' ? g.dv : 1;
}

/** The tile along an axis: Br down the queries, Bc across the keys, the whole of any other axis. */
export function axisTile(g: TileGeometry, a: Axis): number {
  return a === 'q' ? g.blockM : a === 'k' ? g.blockN : axisLength(g, a);
}

/** The step's part of an axis: its query rows or keys, the whole of any other axis. */
function stepRange(g: TileGeometry, a: Axis): readonly [number, number] {
  return a === 'q' ? g.rows : a === 'k' ? g.cols : [0, axisLength(g, a)];
}

/** The current step's rectangle on a map of these axes, or undefined when the step touches none of it. */
export function stepRect(g: TileGeometry, rows: Axis, cols: Axis): Rect | undefined {
  const [r0, r1] = stepRange(g, rows);
  const [c0, c1] = stepRange(g, cols);
  return r1 > r0 && c1 > c0 ? { r0, r1, c0, c1 } : undefined;
}
