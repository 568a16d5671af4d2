// The order in which a flash forward dispatch hands its (query block, head) tiles to the GPU.
//
// A dispatch's grid is [query blocks, heads]; the GPU starts workgroups in linear order
// (x fastest) as SMs free up. Under a causal mask the bottom query block of a head sees every
// key and the top one a single tile's worth, so the order decides how ragged the last wave
// is: head after head, each bottom-first (the order the kernels had), leaves the last head's
// longest tiles starting only a few dozen workgroups before the end, and the other SMs idle
// while they finish. Longest-first over all heads (list scheduling by decreasing length)
// ends with the shortest tiles instead, so every SM finishes within about one short tile of
// the others.
//
// Longest-first over all heads at once would also run every head's K/V at the same time,
// more than L2 holds on large problems; so heads are taken in groups of `headGroup`, and the
// order is longest-first within a group: the GPU works on one group's K/V at a time, and only
// the last group's tail decides the imbalance. headGroup = 1 is the head-after-head order.
//
// One function on each side: tileAt (TypeScript, for tests and the host) and GRID_ORDER_WGSL
// (the kernels), the same arithmetic.

/** Where linear workgroup index `linear` of a [blocks × rows] grid goes: its query block from the top, and its (batch, head) row. */
export function tileAt(linear: number, blocks: number, rows: number, headGroup: number): { block: number; bh: number } {
  const hg = Math.max(1, Math.min(headGroup, rows));
  const per = blocks * hg;
  const g = Math.floor(linear / per);
  const g0 = g * hg;
  const inGroup = Math.min(hg, rows - g0);
  const within = linear - g * per;
  const fromBottom = Math.floor(within / inGroup);
  return { block: blocks - 1 - fromBottom, bh: g0 + (within % inGroup) };
}

/**
 * The head group a problem's tiles are ordered by. A group must hold about two waves of
 * workgroups, so that its longest tiles start early enough: `groupTiles` = 512 is two waves of
 * a 132-SM GPU running two workgroups per SM (WebGPU does not say how many SMs there are;
 * on a smaller GPU the groups are only larger than needed). Non-causal problems, whose tiles
 * are all one length, keep head-after-head (1). `override` (the benchmark) wins when given.
 */
export function chooseHeadGroup(causal: boolean, blocks: number, rows: number, override?: number, groupTiles = 512): number {
  if (override !== undefined) return Math.max(1, Math.min(rows, Math.floor(override)));
  if (!causal) return 1;
  return Math.max(1, Math.min(rows, Math.ceil(groupTiles / Math.max(1, blocks))));
}

/**
 * WGSL `grid_tile(wid, nwg)`: vec2(query block from the top, (batch, head) row) for this
 * workgroup, ordered as tileAt with params.head_group.
 */
export const GRID_ORDER_WGSL = /* wgsl */ `
fn grid_tile(wid: vec3<u32>, nwg: vec3<u32>) -> vec2<u32> {
  let blocks = nwg.x;
  let rows = nwg.y;
  let hg = clamp(params.head_group, 1u, rows);
  let linear = wid.x + wid.y * blocks;
  let per = blocks * hg;
  let g = linear / per;
  let g0 = g * hg;
  let in_group = min(hg, rows - g0);
  let within = linear - g * per;
  return vec2<u32>(blocks - 1u - within / in_group, g0 + within % in_group);
}
`;

/**
 * Makespan of `lengths`, taken in the given order by `workers` identical workers, each starting
 * the next item the moment it frees (how SMs take workgroups): the model tests measure orders by.
 */
export function listScheduleMakespan(lengths: number[], workers: number): number {
  // Workers' finishing times in a binary min-heap.
  const heap = new Array<number>(workers).fill(0);
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let s = i;
      if (l < workers && heap[l] < heap[s]) s = l;
      if (r < workers && heap[r] < heap[s]) s = r;
      if (s === i) return;
      [heap[i], heap[s]] = [heap[s], heap[i]];
      i = s;
    }
  };
  for (const len of lengths) {
    heap[0] += len;
    down(0);
  }
  return Math.max(...heap);
}
