// Who adds into which dQ row block, for the `dq` events and the dQ accumulation view.
// In the K/V-outer backward every column block j is a worker (a thread block) that walks
// its visible row blocks in ascending order and adds dS_ij K_j into dQ_i. FlashScope runs
// the workers one after another, but on the GPU they run at once: at its n-th iteration
// worker j adds into its n-th visible row block, so two workers whose n-th row blocks
// coincide add into the same dQ rows at the same time. That is why the adds are atomic,
// and why their order — hence the fp32 rounding of the sum — varies from run to run
// unless a deterministic mode fixes it.

import type { ScoreModel } from '../core/scores.ts';
import { blockCount } from '../algorithms/blocks.ts';
import { visitedRowBlocks } from './tile-grad.ts';

export class DqAccumulation {
  /** visits[j]: the row blocks worker j visits, ascending. */
  readonly visits: number[][];
  /** workers[i]: the column blocks that add into row block i, ascending. */
  readonly workers: number[][];
  private contributors: number[][];

  constructor(sm: ScoreModel, nq: number, nk: number, blockM: number, blockN: number) {
    const tc = blockCount(nk, blockN);
    const tr = blockCount(nq, blockM);
    this.visits = Array.from({ length: tc }, (_, j) => visitedRowBlocks(sm, nq, nk, blockM, j * blockN, Math.min(nk, (j + 1) * blockN)));
    this.workers = Array.from({ length: tr }, () => []);
    this.visits.forEach((rowsOf, j) => rowsOf.forEach((i) => this.workers[i].push(j)));
    this.contributors = Array.from({ length: tr }, () => []);
  }

  /** A new (batch, head): no row block has been added into yet. */
  reset(): void {
    this.contributors = this.contributors.map(() => []);
  }

  /** Records worker j adding into row block i; returns the contributors so far (j last). */
  add(i: number, j: number): number[] {
    this.contributors[i].push(j);
    return [...this.contributors[i]];
  }

  /** Workers that would add into row block i at the same iteration as worker j if all ran at once. */
  collisions(i: number, j: number): number[] {
    const n = this.visits[j].indexOf(i);
    const out: number[] = [];
    this.visits.forEach((rowsOf, w) => {
      if (w !== j && rowsOf[n] === i) out.push(w);
    });
    return out;
  }

  /**
   * The deterministic order of FA3's semaphore per dQ row block: column blocks in
   * ascending order, or (causal) from the last visible one down. Returns j's position.
   */
  turn(i: number, j: number, descending: boolean): number {
    const ws = this.workers[i];
    return descending ? ws.length - 1 - ws.indexOf(j) : ws.indexOf(j);
  }
}
