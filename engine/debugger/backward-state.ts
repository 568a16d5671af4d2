// The backward pass's part of the state a person sees at one trace position, for the head
// being worked on: D per query row, the dP and dS tiles, and the gradients dQ, dK, dV as
// they accumulate. HeadState (head-state.ts) owns one of these for a backward run and
// applies the backward's events to it; S and the recomputed P stay in HeadState's s and p.
// Like HeadState it is checkpointed by copy and rebuilt by replaying events.

import type { Range, TraceEvent } from '../trace/events.ts';

/** Per query row of dQ, per key row of dK and dV: 0 untouched, 1 accumulating, 2 final (converted or written to HBM). */
export type GradState = 0 | 1 | 2;

export interface BackwardArrays {
  /** [nq]; NaN before the row's D is computed. */
  D: Float64Array;
  /** [nq×nk] dP = dO Vᵀ and dS = P ∘ (dP − D); NaN where not yet computed in this head. */
  dP: Float32Array;
  dS: Float32Array;
  /** [nq×d] dQ (the fp32 accumulator while it accumulates, the output dQ after its conversion/write). */
  dQ: Float32Array;
  dQState: Uint8Array;
  /** [nk×d], [nk×dv]: the K/V block's accumulators, written once at the end of its worker. */
  dK: Float32Array;
  dV: Float32Array;
  /** Per key row (both dK and dV). */
  kvState: Uint8Array;
}

/** What changed since the last frame: all arrays, or a tile rectangle, a range of query rows and a range of key rows. */
export type BackwardPatch =
  | ({ full: true } & BackwardArrays)
  | {
      full: false;
      rows: Range;
      cols: Range;
      /** dP, dS cells of rows×cols, row-major. */
      dP: Float32Array;
      dS: Float32Array;
      qRows: Range;
      D: Float64Array;
      dQ: Float32Array;
      dQState: Uint8Array;
      kRows: Range;
      dK: Float32Array;
      dV: Float32Array;
      kvState: Uint8Array;
    };

export function backwardBuffers(p: BackwardPatch): ArrayBuffer[] {
  return [p.D, p.dP, p.dS, p.dQ, p.dQState, p.dK, p.dV, p.kvState].map((a) => a.buffer as ArrayBuffer);
}

/** Tensors a write step finalizes, by the gradient they belong to. */
const writesQ = (t: readonly string[]) => t.includes('dQ') || t.includes('dQaccum');
const writesKV = (t: readonly string[]) => t.includes('dK') || t.includes('dV');

export class BackwardState implements BackwardArrays {
  readonly D: Float64Array;
  readonly dP: Float32Array;
  readonly dS: Float32Array;
  readonly dQ: Float32Array;
  readonly dQState: Uint8Array;
  readonly dK: Float32Array;
  readonly dV: Float32Array;
  readonly kvState: Uint8Array;
  private changedAll = true;
  private t = [Infinity, -Infinity, Infinity, -Infinity];
  private q = [Infinity, -Infinity];
  private k = [Infinity, -Infinity];

  constructor(
    readonly nq: number,
    readonly nk: number,
    readonly d: number,
    readonly dv: number,
  ) {
    this.D = new Float64Array(nq);
    this.dP = new Float32Array(nq * nk);
    this.dS = new Float32Array(nq * nk);
    this.dQ = new Float32Array(nq * d);
    this.dQState = new Uint8Array(nq);
    this.dK = new Float32Array(nk * d);
    this.dV = new Float32Array(nk * dv);
    this.kvState = new Uint8Array(nk);
    this.reset();
  }

  get bytes(): number {
    return (
      this.D.byteLength +
      this.dP.byteLength +
      this.dS.byteLength +
      this.dQ.byteLength +
      this.dQState.byteLength +
      this.dK.byteLength +
      this.dV.byteLength +
      this.kvState.byteLength
    );
  }

  /** A new head: everything back to "not computed yet". */
  reset(): void {
    this.changedAll = true;
    this.D.fill(NaN);
    this.dP.fill(NaN);
    this.dS.fill(NaN);
    this.dQ.fill(NaN);
    this.dQState.fill(0);
    this.dK.fill(NaN);
    this.dV.fill(NaN);
    this.kvState.fill(0);
  }

  apply(ev: TraceEvent): void {
    const [r0, r1] = ev.tile.rows;
    const [c0, c1] = ev.tile.cols;
    const rows = r1 - r0;
    const cols = c1 - c0;
    switch (ev.kind) {
      case 'dsum':
        for (let r = 0; r < rows; r++) this.D[r0 + r] = ev.D[r];
        this.touchQ(r0, r1);
        break;
      case 'dp':
        this.putTile(this.dP, ev.dP, r0, c0, rows, cols);
        break;
      case 'ds':
        this.putTile(this.dS, ev.dS, r0, c0, rows, cols);
        for (let r = 0; r < rows; r++) this.D[r0 + r] = ev.D[r];
        this.touchQ(r0, r1);
        break;
      case 'dq':
        this.putRows(this.dQ, this.dQState, ev.dQ, r0, rows, this.d, 1);
        this.touchQ(r0, r1);
        break;
      case 'dqconvert':
        this.putRows(this.dQ, this.dQState, ev.dQ, r0, rows, this.d, 2);
        this.touchQ(r0, r1);
        break;
      case 'dk':
        this.putRows(this.dK, this.kvState, ev.dK, c0, cols, this.d, 1);
        this.touchK(c0, c1);
        break;
      case 'dv':
        this.putRows(this.dV, this.kvState, ev.dV, c0, cols, this.dv, 1);
        this.touchK(c0, c1);
        break;
      case 'write':
        // A write of dQ (FA1's zeroed dQ, standard's finished rows) or of FA2/FA3's zeroed
        // accumulator: rows never added to start at 0; rows already added to are final.
        if (writesQ(ev.tensors)) {
          for (let r = r0; r < r1; r++) {
            if (this.dQState[r] === 0) {
              this.dQ.fill(0, r * this.d, (r + 1) * this.d);
              this.dQState[r] = 1;
            } else if (ev.tensors.includes('dQ')) this.dQState[r] = 2;
          }
          this.touchQ(r0, r1);
        }
        if (writesKV(ev.tensors)) {
          for (let c = c0; c < c1; c++) this.kvState[c] = 2;
          this.touchK(c0, c1);
        }
        break;
      default:
        break;
    }
  }

  private putTile(dst: Float32Array, src: number[], r0: number, c0: number, rows: number, cols: number): void {
    for (let r = 0; r < rows; r++) {
      const base = (r0 + r) * this.nk + c0;
      for (let c = 0; c < cols; c++) dst[base + c] = src[r * cols + c];
    }
    const t = this.t;
    t[0] = Math.min(t[0], r0);
    t[1] = Math.max(t[1], r0 + rows);
    t[2] = Math.min(t[2], c0);
    t[3] = Math.max(t[3], c0 + cols);
  }

  private putRows(dst: Float32Array, state: Uint8Array, src: number[], r0: number, rows: number, width: number, to: GradState): void {
    const n = Math.min(rows * width, src.length);
    for (let i = 0; i < n; i++) dst[r0 * width + i] = src[i];
    for (let r = 0; r < rows; r++) state[r0 + r] = to;
  }

  private touchQ(r0: number, r1: number): void {
    this.q[0] = Math.min(this.q[0], r0);
    this.q[1] = Math.max(this.q[1], r1);
  }
  private touchK(c0: number, c1: number): void {
    this.k[0] = Math.min(this.k[0], c0);
    this.k[1] = Math.max(this.k[1], c1);
  }

  /** Records what `ev` writes without writing it (a seek back within one head). */
  markChanged(ev: TraceEvent): void {
    const [r0, r1] = ev.tile.rows;
    const [c0, c1] = ev.tile.cols;
    if (ev.kind === 'dp' || ev.kind === 'ds') {
      const t = this.t;
      t[0] = Math.min(t[0], r0);
      t[1] = Math.max(t[1], r1);
      t[2] = Math.min(t[2], c0);
      t[3] = Math.max(t[3], c1);
    }
    if (r1 > r0) this.touchQ(r0, r1);
    if (c1 > c0) this.touchK(c0, c1);
  }

  markAllChanged(): void {
    this.changedAll = true;
  }

  saveChanges(): number[] {
    return [this.changedAll ? 1 : 0, ...this.t, ...this.q, ...this.k];
  }
  restoreChanges(c: number[]): void {
    this.changedAll = c[0] === 1;
    this.t = c.slice(1, 5);
    this.q = c.slice(5, 7);
    this.k = c.slice(7, 9);
  }

  takeChanges(): BackwardPatch {
    let patch: BackwardPatch;
    if (this.changedAll) {
      patch = {
        full: true,
        D: this.D.slice(),
        dP: this.dP.slice(),
        dS: this.dS.slice(),
        dQ: this.dQ.slice(),
        dQState: this.dQState.slice(),
        dK: this.dK.slice(),
        dV: this.dV.slice(),
        kvState: this.kvState.slice(),
      };
    } else {
      const range = (lo: number, hi: number): Range => (hi > lo ? [lo, hi] : [0, 0]);
      const rows = range(this.t[0], this.t[1]);
      const cols = range(this.t[2], this.t[3]);
      const qRows = range(this.q[0], this.q[1]);
      const kRows = range(this.k[0], this.k[1]);
      const w = cols[1] - cols[0];
      const h = rows[1] - rows[0];
      const dP = new Float32Array(h * w);
      const dS = new Float32Array(h * w);
      for (let r = 0; r < h; r++) {
        const from = (rows[0] + r) * this.nk + cols[0];
        dP.set(this.dP.subarray(from, from + w), r * w);
        dS.set(this.dS.subarray(from, from + w), r * w);
      }
      patch = {
        full: false,
        rows,
        cols,
        dP,
        dS,
        qRows,
        D: this.D.slice(qRows[0], qRows[1]),
        dQ: this.dQ.slice(qRows[0] * this.d, qRows[1] * this.d),
        dQState: this.dQState.slice(qRows[0], qRows[1]),
        kRows,
        dK: this.dK.slice(kRows[0] * this.d, kRows[1] * this.d),
        dV: this.dV.slice(kRows[0] * this.dv, kRows[1] * this.dv),
        kvState: this.kvState.slice(kRows[0], kRows[1]),
      };
    }
    this.changedAll = false;
    this.t = [Infinity, -Infinity, Infinity, -Infinity];
    this.q = [Infinity, -Infinity];
    this.k = [Infinity, -Infinity];
    return patch;
  }

  copyFrom(o: BackwardState): void {
    this.changedAll = true;
    this.D.set(o.D);
    this.dP.set(o.dP);
    this.dS.set(o.dS);
    this.dQ.set(o.dQ);
    this.dQState.set(o.dQState);
    this.dK.set(o.dK);
    this.dV.set(o.dV);
    this.kvState.set(o.kvState);
  }
}

/** The receiving side: a full patch replaces the arrays, a partial one is written into `prev` in place. */
export function applyBackwardPatch(prev: BackwardArrays | undefined, p: BackwardPatch, nq: number, nk: number): BackwardArrays {
  if (p.full) {
    const { full: _full, ...arrays } = p;
    return arrays;
  }
  if (!prev || prev.D.length !== nq || prev.kvState.length !== nk)
    throw new Error('a partial backward update arrived without the frame it patches');
  const d = prev.dK.length / nk;
  const dv = prev.dV.length / nk;
  const w = p.cols[1] - p.cols[0];
  for (let r = 0; r < p.rows[1] - p.rows[0]; r++) {
    const at = (p.rows[0] + r) * nk + p.cols[0];
    prev.dP.set(p.dP.subarray(r * w, (r + 1) * w), at);
    prev.dS.set(p.dS.subarray(r * w, (r + 1) * w), at);
  }
  prev.D.set(p.D, p.qRows[0]);
  prev.dQ.set(p.dQ, p.qRows[0] * d);
  prev.dQState.set(p.dQState, p.qRows[0]);
  prev.dK.set(p.dK, p.kRows[0] * d);
  prev.dV.set(p.dV, p.kRows[0] * dv);
  prev.kvState.set(p.kvState, p.kRows[0]);
  return prev;
}
