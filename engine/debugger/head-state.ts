// The state a person sees at one trace position, for the (batch, head) being worked on:
// the S/P/O matrices filled tile by tile, the per-row running statistics and the counters.
// It is rebuilt by applying trace events in order, so it can be checkpointed (clone) and
// replayed from a checkpoint without re-running the algorithm.

import { addDelta, emptyCounters, type Counters } from '../core/counters.ts';
import type { Range, TraceEvent } from '../trace/events.ts';
import type { FramePatch } from './protocol.ts';
import { BackwardState } from './backward-state.ts';

export class HeadState {
  b = -1;
  h = -1;
  readonly s: Float32Array;
  readonly p: Float32Array;
  readonly mask: Uint8Array;
  readonly o: Float32Array;
  readonly oState: Uint8Array;
  readonly m: Float64Array;
  readonly l: Float64Array;
  counters: Counters = emptyCounters();
  /** A backward run's gradients (D, dP, dS, dQ, dK, dV); absent for a forward run. */
  readonly bwd: BackwardState | undefined;
  /**
   * What changed since the last frame was cut (see takeChanges): a rectangle of S/P/mask
   * cells and a range of rows of O/m/l, or "everything" after a head switch or a restore.
   */
  private changedAll = true;
  private cr0 = Infinity;
  private cr1 = -Infinity;
  private cc0 = Infinity;
  private cc1 = -Infinity;
  private or0 = Infinity;
  private or1 = -Infinity;

  constructor(
    readonly nq: number,
    readonly nk: number,
    readonly dv: number,
    /** The head dimension d of Q and K; given for a backward run, whose dQ and dK have it. */
    readonly backwardD?: number,
  ) {
    this.bwd = backwardD === undefined ? undefined : new BackwardState(nq, nk, backwardD, dv);
    this.s = new Float32Array(nq * nk);
    this.p = new Float32Array(nq * nk);
    this.mask = new Uint8Array(nq * nk);
    this.o = new Float32Array(nq * dv);
    this.oState = new Uint8Array(nq);
    this.m = new Float64Array(nq);
    this.l = new Float64Array(nq);
    this.resetHead(-1, -1);
  }

  /** Bytes one copy of this state occupies (what a checkpoint costs). */
  get bytes(): number {
    return (
      this.s.byteLength +
      this.p.byteLength +
      this.mask.byteLength +
      this.o.byteLength +
      this.oState.byteLength +
      this.m.byteLength +
      this.l.byteLength +
      (this.bwd?.bytes ?? 0) +
      512
    );
  }

  private resetHead(b: number, h: number): void {
    this.changedAll = true;
    this.b = b;
    this.h = h;
    this.s.fill(NaN);
    this.p.fill(NaN);
    this.mask.fill(0);
    this.o.fill(NaN);
    this.oState.fill(0);
    this.m.fill(NaN);
    this.l.fill(NaN);
    this.bwd?.reset();
  }

  apply(ev: TraceEvent): void {
    if (ev.b !== this.b || ev.h !== this.h) this.resetHead(ev.b, ev.h);
    addDelta(this.counters, ev.delta);
    this.counters.steps = ev.step + 1;
    const [r0, r1] = ev.tile.rows;
    const [c0, c1] = ev.tile.cols;
    const rows = r1 - r0;
    const cols = c1 - c0;
    this.markChanged(ev);
    switch (ev.kind) {
      case 'qk':
        this.putTile(this.s, ev.s, r0, c0, rows, cols);
        break;
      case 'mask':
        this.putTile(this.s, ev.s, r0, c0, rows, cols);
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) this.mask[(r0 + r) * this.nk + c0 + c] = ev.masked[r * cols + c];
        break;
      case 'exp':
      case 'recompute':
        this.putTile(this.p, ev.p, r0, c0, rows, cols);
        break;
      case 'rowmax':
        for (let r = 0; r < rows; r++) this.m[r0 + r] = ev.mAfter[r];
        break;
      case 'rowsum':
        for (let r = 0; r < rows; r++) this.l[r0 + r] = ev.lAfter[r];
        break;
      case 'rescale':
        for (let r = 0; r < rows; r++) this.m[r0 + r] = ev.mNew[r];
        break;
      case 'pv':
        this.putRows(ev.o, r0, rows, 1);
        break;
      case 'normalize':
        // Standard attention normalizes P (rows×nk); the flash algorithms normalize O.
        if (ev.p) this.putTile(this.p, ev.p, r0, 0, rows, this.nk);
        else this.putRows(ev.o, r0, rows, 2);
        for (let r = 0; r < rows; r++) this.l[r0 + r] = ev.l[r];
        break;
      case 'combine':
        this.putRows(ev.o, r0, rows, 2);
        break;
      case 'write':
        if (ev.tensors.includes('O')) for (let r = r0; r < r1; r++) this.oState[r] = 3;
        break;
      default:
        break;
    }
    this.bwd?.apply(ev);
  }

  /** Records the cells and rows `ev` writes, without writing them. */
  markChanged(ev: TraceEvent): void {
    this.bwd?.markChanged(ev);
    const [r0, r1] = ev.tile.rows;
    if (r1 <= r0) return;
    if (r0 < this.or0) this.or0 = r0;
    if (r1 > this.or1) this.or1 = r1;
    let [c0, c1] = ev.tile.cols;
    if (ev.kind === 'normalize' && ev.p) [c0, c1] = [0, this.nk];
    else if (ev.kind !== 'qk' && ev.kind !== 'mask' && ev.kind !== 'exp' && ev.kind !== 'recompute') return;
    if (r0 < this.cr0) this.cr0 = r0;
    if (r1 > this.cr1) this.cr1 = r1;
    if (c0 < this.cc0) this.cc0 = c0;
    if (c1 > this.cc1) this.cc1 = c1;
  }

  /** The pending changes, to be put back after a restore that the receiver need not see whole. */
  saveChanges(): number[] {
    return [this.changedAll ? 1 : 0, this.cr0, this.cr1, this.cc0, this.cc1, this.or0, this.or1, ...(this.bwd?.saveChanges() ?? [])];
  }
  restoreChanges(c: number[]): void {
    this.changedAll = c[0] === 1;
    [, this.cr0, this.cr1, this.cc0, this.cc1, this.or0, this.or1] = c;
    this.bwd?.restoreChanges(c.slice(7));
  }

  private putTile(dst: Float32Array, src: number[], r0: number, c0: number, rows: number, cols: number): void {
    for (let r = 0; r < rows; r++) {
      const base = (r0 + r) * this.nk + c0;
      for (let c = 0; c < cols; c++) dst[base + c] = src[r * cols + c];
    }
  }

  private putRows(src: number[], r0: number, rows: number, state: number): void {
    const n = Math.min(rows * this.dv, src.length);
    for (let i = 0; i < n; i++) this.o[r0 * this.dv + i] = src[i];
    for (let r = 0; r < rows; r++) this.oState[r0 + r] = state;
  }

  /**
   * The changes since the last call, as copies ready to transfer, and forgets them. The
   * receiver applies them with applyUpdate (frames.ts) to the state it already holds.
   */
  takeChanges(): FramePatch {
    // A change over more than half the matrix (a seek far away) goes whole: the receiver then
    // takes the transferred arrays as they are instead of copying a patch into its own.
    const area = Math.max(0, this.cr1 - this.cr0) * Math.max(0, this.cc1 - this.cc0);
    if (2 * area > this.nq * this.nk) this.markAllChanged();
    let patch: FramePatch;
    if (this.changedAll) {
      patch = {
        full: true,
        s: this.s.slice(),
        p: this.p.slice(),
        mask: this.mask.slice(),
        o: this.o.slice(),
        oState: this.oState.slice(),
        m: this.m.slice(),
        l: this.l.slice(),
      };
    } else {
      const rows: Range = this.cr1 > this.cr0 ? [this.cr0, this.cr1] : [0, 0];
      const cols: Range = this.cc1 > this.cc0 ? [this.cc0, this.cc1] : [0, 0];
      const oRows: Range = this.or1 > this.or0 ? [this.or0, this.or1] : [0, 0];
      const w = cols[1] - cols[0];
      const h = rows[1] - rows[0];
      const s = new Float32Array(h * w);
      const p = new Float32Array(h * w);
      const mask = new Uint8Array(h * w);
      for (let r = 0; r < h; r++) {
        const from = (rows[0] + r) * this.nk + cols[0];
        s.set(this.s.subarray(from, from + w), r * w);
        p.set(this.p.subarray(from, from + w), r * w);
        mask.set(this.mask.subarray(from, from + w), r * w);
      }
      patch = {
        full: false,
        rows,
        cols,
        oRows,
        s,
        p,
        mask,
        o: this.o.slice(oRows[0] * this.dv, oRows[1] * this.dv),
        oState: this.oState.slice(oRows[0], oRows[1]),
        m: this.m.slice(oRows[0], oRows[1]),
        l: this.l.slice(oRows[0], oRows[1]),
      };
    }
    if (this.bwd) patch.bwd = this.bwd.takeChanges();
    this.changedAll = false;
    this.cr0 = this.cc0 = this.or0 = Infinity;
    this.cr1 = this.cc1 = this.or1 = -Infinity;
    return patch;
  }

  /** The next takeChanges sends everything (a receiver that holds no frame yet). */
  markAllChanged(): void {
    this.changedAll = true;
    this.bwd?.markAllChanged();
  }

  copyFrom(o: HeadState): void {
    this.changedAll = true;
    this.b = o.b;
    this.h = o.h;
    this.s.set(o.s);
    this.p.set(o.p);
    this.mask.set(o.mask);
    this.o.set(o.o);
    this.oState.set(o.oState);
    this.m.set(o.m);
    this.l.set(o.l);
    if (this.bwd && o.bwd) this.bwd.copyFrom(o.bwd);
    this.counters = cloneCounters(o.counters);
  }

  clone(): HeadState {
    const c = new HeadState(this.nq, this.nk, this.dv, this.backwardD);
    c.copyFrom(this);
    return c;
  }
}

export function cloneCounters(c: Counters): Counters {
  const copy = { ...c, hbmRead: { ...c.hbmRead }, hbmWritten: { ...c.hbmWritten } };
  if (c.sparsity) copy.sparsity = { ...c.sparsity };
  return copy;
}
