// Builds trace events and keeps the counters. With tracing off, emit() only counts and
// returns undefined, so an algorithm's `if (ev) yield ev` costs nothing on large runs and
// the payload closures (which copy tile values) are never called.

import { addDelta, emptyCounters, type CounterDelta, type Counters } from '../counters.ts';
import type { PhaseKind, TileRef, TraceEvent } from './events.ts';

export interface EmitBase {
  b: number;
  h: number;
  outer: number;
  inner: number;
  tile: TileRef;
  line: string;
  delta: CounterDelta;
}

export class Tracer {
  readonly counters: Counters = emptyCounters();
  constructor(readonly on: boolean) {}

  emit<K extends PhaseKind>(
    kind: K,
    base: EmitBase,
    payload: () => Omit<Extract<TraceEvent, { kind: K }>, keyof EmitBase | 'kind' | 'step'>,
  ): TraceEvent | undefined {
    const step = this.counters.steps++;
    addDelta(this.counters, base.delta);
    if (!this.on) return undefined;
    return { step, kind, ...base, ...payload() } as unknown as TraceEvent;
  }
}

/** Copies rows×cols of a row-major buffer with row stride `stride` into a plain array. */
export function tileValues(buf: ArrayLike<number>, rows: number, cols: number, stride: number): number[] {
  const out = new Array<number>(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[r * cols + c] = buf[r * stride + c];
  return out;
}
