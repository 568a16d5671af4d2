// Builds trace events and keeps the counters. With tracing off, emit() only counts and
// returns undefined, so an algorithm's `if (ev) yield ev` costs nothing on large runs and
// the payload closures (which copy tile values) are never called.

import { addDelta, emptyCounters, type CounterDelta, type Counters, type HbmTensor } from '../core/counters.ts';
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

/**
 * What a memory layout adds to an event an algorithm emits, with tracing on or off: extra
 * reads (e.g. the block-table entries a K/V load goes through) and, when tracing, extra
 * fields (e.g. the physical pages). Lets engine/layouts/ wrap any algorithm unchanged.
 */
export type EventAnnotator = (
  kind: PhaseKind,
  base: EmitBase,
) => { hbmRead?: Partial<Record<HbmTensor, number>>; fields?: () => Partial<TraceEvent> } | undefined;

export class Tracer {
  readonly counters: Counters = emptyCounters();
  constructor(
    readonly on: boolean,
    private readonly annotate?: EventAnnotator,
  ) {}

  emit<K extends PhaseKind>(
    kind: K,
    base: EmitBase,
    payload: () => Omit<Extract<TraceEvent, { kind: K }>, keyof EmitBase | 'kind' | 'step'>,
  ): TraceEvent | undefined {
    const step = this.counters.steps++;
    const extra = this.annotate?.(kind, base);
    if (extra?.hbmRead) base = { ...base, delta: { ...base.delta, hbmRead: { ...base.delta.hbmRead, ...extra.hbmRead } } };
    addDelta(this.counters, base.delta);
    if (!this.on) return undefined;
    const ev = { step, kind, ...base, ...payload(), ...extra?.fields?.() } as unknown as TraceEvent;
    if (extra?.hbmRead && (ev.kind === 'load' || ev.kind === 'write')) {
      ev.tensors = [...ev.tensors, ...(Object.keys(extra.hbmRead) as HbmTensor[]).filter((t) => !ev.tensors.includes(t))];
    }
    return ev;
  }
}

/** Copies rows×cols of a row-major buffer with row stride `stride` into a plain array. */
export function tileValues(buf: ArrayLike<number>, rows: number, cols: number, stride: number): number[] {
  const out = new Array<number>(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[r * cols + c] = buf[r * stride + c];
  return out;
}
