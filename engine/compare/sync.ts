// Synchronised stepping across compare panes. A leading pane's position is turned into a
// point on a common axis, and every other pane moves to its own step at that point:
// - 'kv': the same query row working on the same key column (the K/V block that holds
//   it), so FA1 (K/V outer loop) and FA2 (Q outer loop) line up on the same tile of work.
//   The query row is the first of the leader's rows, so a follower that steps its Q tile in
//   slices (sage v2's 32-row warps, FA3's two ping-pong warpgroups) lands on the slice that
//   holds it, and a load lands on the load of the same tensor (K, not the V after it). This
//   is a match of work, not of order: FA3 visits K/V blocks last to first (reverseKv, as the
//   kernel does) where sage, FA2 and most others go first to last, so FA3's first K/V step
//   puts a sage pane on its last K/V block (engine/compare/sync.test.ts);
// - 'progress': the same fraction of the trace;
// - 'time': the same simulated time on the GPU, where the algorithm has a hardware
//   schedule (stepTimes below); elsewhere the caller falls back to 'progress'.

import type { PhaseKind, TraceEvent } from '../trace/events.ts';
import type { HwSchedule } from '../algorithms/schedule-registry.ts';

export type SyncAxis = 'kv' | 'progress' | 'time' | 'none';
export const SYNC_AXES: readonly SyncAxis[] = ['kv', 'progress', 'time', 'none'];

export interface SyncPoint {
  /** step / (total − 1), 0 for a one-step trace. */
  progress: number;
  b: number;
  h: number;
  /** First query row and key column of the leader's tile (col −1: no K/V block). */
  row: number;
  col: number;
  kind: PhaseKind;
  /** Loads and writes: the HBM tensors moved ("K", "V", "O,LSE"), so a K load is not matched to a V load; absent otherwise. */
  tensors?: string;
  /** Simulated time in µs, null when the leader has no hardware schedule. */
  timeUs: number | null;
}

export function pointOf(events: readonly TraceEvent[], step: number, times: Float64Array | null): SyncPoint {
  const e = events[step];
  return {
    progress: events.length > 1 ? step / (events.length - 1) : 0,
    b: e.b,
    h: e.h,
    row: e.tile.rows[0],
    col: e.tile.kvBlock >= 0 ? e.tile.cols[0] : -1,
    kind: e.kind,
    ...(e.kind === 'load' || e.kind === 'write' ? { tensors: e.tensors.join(',') } : {}),
    timeUs: times ? times[step] : null,
  };
}

/** Same phase as the point: the same kind, and for loads and writes the same tensors. */
const samePhase = (e: TraceEvent, pt: SyncPoint) =>
  e.kind === pt.kind && (pt.tensors === undefined || ((e.kind === 'load' || e.kind === 'write') && e.tensors.join(',') === pt.tensors));

const byProgress = (n: number, p: number) => Math.max(0, Math.min(n - 1, Math.round(p * (n - 1))));

const covers = (e: TraceEvent, pt: SyncPoint) => e.b === pt.b && e.h === pt.h && pt.row >= e.tile.rows[0] && pt.row < e.tile.rows[1];

/**
 * The follower's step for a point. Returns the step and, when the axis could not be used
 * as asked, the axis actually used.
 */
export function stepFor(
  events: readonly TraceEvent[],
  pt: SyncPoint,
  axis: SyncAxis,
  times: Float64Array | null,
): { step: number; used: SyncAxis } {
  const n = events.length;
  if (axis === 'time') {
    if (pt.timeUs === null || !times) return { step: byProgress(n, pt.progress), used: 'progress' };
    // Latest step of the same query row done by then; any row when that row never starts by then.
    let sameRow = -1;
    let any = -1;
    for (let i = 0; i < n; i++) {
      if (times[i] > pt.timeUs) continue;
      if (covers(events[i], pt)) sameRow = i;
      if (any < 0 || times[i] >= times[any]) any = i;
    }
    return { step: sameRow >= 0 ? sameRow : Math.max(0, any), used: 'time' };
  }
  if (axis === 'kv') {
    if (pt.col < 0) {
      // No K/V block (loading Q, normalizing, writing): the same phase of the same rows, else the same kind.
      let kind = -1;
      for (let i = 0; i < n; i++) {
        const e = events[i];
        if (!covers(e, pt) || e.kind !== pt.kind || e.tile.kvBlock >= 0) continue;
        if (samePhase(e, pt)) return { step: i, used: 'kv' };
        if (kind < 0) kind = i;
      }
      return kind >= 0 ? { step: kind, used: 'kv' } : { step: byProgress(n, pt.progress), used: 'progress' };
    }
    // The same phase on that block and row; else the same kind (a load of other tensors); else the block's first step on the row.
    let first = -1;
    let kind = -1;
    for (let i = 0; i < n; i++) {
      const e = events[i];
      if (!covers(e, pt) || e.tile.kvBlock < 0 || pt.col < e.tile.cols[0] || pt.col >= e.tile.cols[1]) continue;
      if (samePhase(e, pt)) return { step: i, used: 'kv' };
      if (kind < 0 && e.kind === pt.kind) kind = i;
      if (first < 0) first = i;
    }
    if (kind >= 0) return { step: kind, used: 'kv' };
    // A block the follower skips (causal, window): its last step on those rows before that column.
    if (first < 0) {
      for (let i = 0; i < n; i++) {
        const e = events[i];
        if (covers(e, pt) && e.tile.kvBlock >= 0 && e.tile.cols[1] <= pt.col) first = i;
      }
    }
    return first >= 0 ? { step: first, used: 'kv' } : { step: byProgress(n, pt.progress), used: 'progress' };
  }
  return { step: byProgress(n, pt.progress), used: 'progress' };
}

/**
 * Simulated time (µs) at which each trace step's work is done, from one SM's hardware
 * schedule: a step on K/V block j ends when the schedule's last op on K_j/V_j/S_j/P_j ends
 * (blocks mapped by key column, as the trace may use other tile sizes than the kernel);
 * Q tiles run as CTAs, waves of (SMs × CTAs per SM) one after another. Steps without a
 * K/V block sit at their CTA's start (loads) or end (normalize, write, combine).
 */
export function stepTimes(events: readonly TraceEvent[], sched: HwSchedule, smCount: number, clockGHz: number, hq: number): Float64Array {
  const blockM = sched.resources.tiles.block_m;
  const blockN = sched.resources.tiles.block_n;
  const kvEnd: number[] = [];
  for (const ev of sched.timeline) {
    const ids = new Set<number>();
    const m = /^[KVSP](\d+)$/.exec(ev.tile);
    if (m) ids.add(Number(m[1]));
    for (const x of ev.op.matchAll(/\b[KV](\d+)\b/g)) ids.add(Number(x[1]));
    for (const j of ids) kvEnd[j] = Math.max(kvEnd[j] ?? 0, ev.end);
  }
  // Each block finishes no earlier than the ones the schedule finished before it.
  const slots = Math.max(1, smCount * Math.max(1, sched.resources.ctas_per_sm));
  const toUs = 1 / (clockGHz * 1e3);
  const out = new Float64Array(events.length);
  let maxRow = 0;
  for (const e of events) maxRow = Math.max(maxRow, e.tile.rows[1]);
  const tilesM = Math.max(1, Math.ceil(maxRow / blockM));
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    const cta = (e.b * hq + e.h) * tilesM + Math.floor(e.tile.rows[0] / blockM);
    const start = Math.floor(cta / slots) * sched.cycles;
    let t: number;
    if (e.tile.kvBlock >= 0) {
      const j = Math.floor(e.tile.cols[0] / blockN);
      t = start + (kvEnd[j] ?? sched.cycles);
    } else t = e.kind === 'load' ? start : start + sched.cycles;
    out[i] = t * toUs;
  }
  return out;
}
