// Where the adds into dQ go, for the dQ accumulation view of a K/V-outer backward (FA2,
// FA3). Each K/V column block j is one worker; its inner loop over Q row blocks i adds
// τ·dS_ij K_j into dQ_i. The trace records the adds one after another, but on the GPU the
// workers run at once, so the view asks two questions of the adds recorded so far:
// which workers have added into which row block, and which workers would be adding into
// the current row block at the same moment if all workers ran in step (same position in
// their own inner loop). Those simultaneous adds are what the atomics resolve.
// Pure data over the add list; no DOM.

/** One add into a row block of dQ, as recorded in the trace. */
export interface DqAdd {
  step: number;
  b: number;
  h: number;
  qBlock: number;
  kvBlock: number;
  /** true: an atomic add into the float32 accumulator; false: a read-modify-write by one worker (FA1). */
  atomic: boolean;
}

export interface DqAccumulation {
  /** Row blocks (Tr) × workers (Tc), row-major: adds recorded so far into dQ_i by worker j (0 or 1; more with several passes). */
  count: Int32Array;
  rows: number;
  cols: number;
  /** The add at the current step, if the current step is one. */
  current?: DqAdd;
  /** Position of the current add in its worker's own inner loop (0-based). */
  position?: number;
  /**
   * Workers whose add at that same position of their inner loop goes to the current row
   * block too: with every worker running in step, these adds land on dQ_i together.
   */
  together: number[];
  /** Per row block: workers that add into it over the whole run (a block is skipped by a worker under a causal or window mask). */
  contributors: number[][];
}

/** The adds of one head, with each add's position in its worker's inner loop. */
function positions(adds: readonly DqAdd[]): Map<DqAdd, number> {
  const next = new Map<number, number>();
  const out = new Map<DqAdd, number>();
  for (const a of adds) {
    const k = next.get(a.kvBlock) ?? 0;
    out.set(a, k);
    next.set(a.kvBlock, k + 1);
  }
  return out;
}

/**
 * The accumulation state after `step` for head (b, h). `adds` is the whole run's add list
 * in trace order; `rows`/`cols` are the numbers of Q row blocks and K/V column blocks.
 */
export function dqAccumulationAt(adds: readonly DqAdd[], step: number, b: number, h: number, rows: number, cols: number): DqAccumulation {
  const head = adds.filter((a) => a.b === b && a.h === h);
  const count = new Int32Array(rows * cols);
  const contributors: number[][] = Array.from({ length: rows }, () => []);
  for (const a of head) {
    if (a.step <= step) count[a.qBlock * cols + a.kvBlock]++;
    if (!contributors[a.qBlock].includes(a.kvBlock)) contributors[a.qBlock].push(a.kvBlock);
  }
  for (const c of contributors) c.sort((x, y) => x - y);
  const current = head.find((a) => a.step === step);
  if (!current) return { count, rows, cols, together: [], contributors };
  const pos = positions(head);
  const k = pos.get(current)!;
  const together = head
    .filter((a) => a.kvBlock !== current.kvBlock && a.qBlock === current.qBlock && pos.get(a) === k)
    .map((a) => a.kvBlock);
  together.sort((x, y) => x - y);
  return { count, rows, cols, current, position: k, together, contributors };
}
