// Small questions asked of a recorded trace, shared by the chapters' step locators and
// answer functions. Each returns what the engine recorded; none recomputes the maths.

import {
  type LoadRequest,
  type InputDistribution,
  type AttentionProblem,
  type TraceEvent,
  totalBytes,
  type Counters,
} from '../../../engine/api.ts';

export type EventOf<K extends TraceEvent['kind']> = Extract<TraceEvent, { kind: K }>;

/** A stepping problem for a lesson: one head, fp32 unless asked, seed 1, normal inputs. */
export function lessonRequest(
  algorithm: string,
  shape: Pick<AttentionProblem, 'nq' | 'nk' | 'd'> & Partial<AttentionProblem>,
  blocks: LoadRequest['blocks'],
  extra: { seed?: number; distribution?: InputDistribution; features?: Record<string, boolean | number> } = {},
): LoadRequest {
  const problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, dv: shape.d, causal: false, dtype: 'fp32', ...shape };
  const req: LoadRequest = { algorithm, problem, seed: extra.seed ?? 1, distribution: extra.distribution ?? 'normal', blocks };
  if (extra.features) req.features = { ...extra.features };
  return req;
}

/** Index of the first event matching, or −1. */
export function firstIndex(events: readonly TraceEvent[], pred: (e: TraceEvent, i: number) => boolean): number {
  for (let i = 0; i < events.length; i++) if (pred(events[i], i)) return i;
  return -1;
}

export const isKind =
  <K extends TraceEvent['kind']>(k: K) =>
  (e: TraceEvent): e is EventOf<K> =>
    e.kind === k;

export const covers = (e: TraceEvent, row: number) => row >= e.tile.rows[0] && row < e.tile.rows[1];

/** The rowmax events that update `row` (head 0,0), in trace order. */
export function rowmaxEventsOf(events: readonly TraceEvent[], row: number): EventOf<'rowmax'>[] {
  return events.filter((e): e is EventOf<'rowmax'> => e.kind === 'rowmax' && e.b === 0 && e.h === 0 && covers(e, row));
}

/** K/V block of the last step at which `row`'s running max grew (the first block always counts). */
export function lastMaxChangeBlock(events: readonly TraceEvent[], row: number): number {
  let block = -1;
  for (const e of rowmaxEventsOf(events, row)) {
    const r = row - e.tile.rows[0];
    if (e.mAfter[r] > e.mBefore[r] || (Number.isNaN(e.mBefore[r]) && Number.isFinite(e.mAfter[r]))) block = e.tile.kvBlock;
  }
  return block;
}

/** `row`'s running sum after its last rowsum step (head 0,0). */
export function finalRowSum(events: readonly TraceEvent[], row: number): number {
  let l = NaN;
  for (const e of events) if (e.kind === 'rowsum' && e.b === 0 && e.h === 0 && covers(e, row)) l = e.lAfter[row - e.tile.rows[0]];
  return l;
}

export function hbmTotal(c: Counters): number {
  return totalBytes(c.hbmRead) + totalBytes(c.hbmWritten);
}

export function tensorTraffic(c: Counters, tensors: string[]): number {
  let s = 0;
  for (const t of tensors) s += (c.hbmRead[t as keyof Counters['hbmRead']] ?? 0) + (c.hbmWritten[t as keyof Counters['hbmWritten']] ?? 0);
  return s;
}

/** Bytes as a person reads them: 12 288 B (12 KiB). */
export function fmtBytes(n: number): string {
  const grouped = Math.round(n).toLocaleString('en-US').replace(/,/g, ' ');
  if (n < 1024) return `${grouped} B`;
  const kib = n / 1024;
  return kib < 1024 ? `${grouped} B (${Number(kib.toPrecision(4))} KiB)` : `${grouped} B (${Number((kib / 1024).toPrecision(4))} MiB)`;
}

export function fmt(x: number, digits = 5): string {
  return Number.isFinite(x) ? String(Number(x.toPrecision(digits))) : String(x);
}

const SUPERSCRIPT: Record<string, string> = { '-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };

/** 5.2 × 10⁻⁸: a number far from 1 as a person writes it, two significant digits. */
export function fmtScientific(x: number): string {
  const [mantissa, exponent] = x.toExponential(1).split('e');
  return `${mantissa} × 10${[...String(Number(exponent))].map((c) => SUPERSCRIPT[c]).join('')}`;
}
