// What the shared memory of the current CTA holds at a step of a paged run: the Q tile and
// the K/V tile buffers, each K/V buffer with the physical pages (and the slots in them) its
// keys were copied from. The buffers are the hardware model's (engine/hw/schedules:
// warpTiledSmem lays out sQ, then kvStages sK buffers, then kvStages sV buffers; fmha_v2
// double-buffers K/V, flash-decoding's split kernel and FA2 keep one of each), and the
// contents come from the run's own load events: the n-th K/V tile a CTA loads goes to
// stage n mod kvStages, so with fmha_v2 the next tile's pages arrive while the current one
// is being used. A CTA is one (sequence, head, Q tile, split) of the step list.

import { findDescriptor } from '../algorithms/registry.ts';
import type { Range } from '../trace/events.ts';
import type { ServingRun, ServingStep } from './serving-run.ts';

/**
 * K/V buffers per CTA in the hardware model (see the header) for the algorithms whose paged
 * kernels FlashScope draws this way; undefined for the others (FA3's and FA4's rings, the
 * CuTe pipeline and the unfused or FA1 loops have SMEM of a different shape).
 */
export function kvStagesOf(algorithm: string): number | undefined {
  return findDescriptor(algorithm)?.serving.smemKvStages;
}

/** Keys [k0, k1) of a sequence that lie in one page: physical page, slots [s0, s1) in it. */
export interface PageSpan {
  page: number;
  logical: number;
  keys: Range;
  slots: Range;
}

export interface SmemBuffer {
  name: 'sQ' | 'sK' | 'sV';
  stage: number;
  /** Capacity: tile rows (blockM or blockN) × head dim × element bytes. */
  bytes: number;
  /** Rows (sQ) or keys (sK/sV) of the sequence it holds, undefined before its first load. */
  holds?: Range;
  /** sK/sV: where its keys came from in the pool. */
  spans?: PageSpan[];
  /** The current step fills this buffer (a load) or reads it (a compute step on its keys). */
  role?: 'loading' | 'reading';
}

export interface SmemState {
  /** The CTA: sequence, head, Q tile and split of the current step. */
  b: number;
  h: number;
  qBlock: number;
  split: number | undefined;
  buffers: SmemBuffer[];
}

const sameCta = (a: ServingStep, b: ServingStep) => a.b === b.b && a.h === b.h && a.qBlock === b.qBlock && a.split === b.split;

/** The page spans of keys [c0, c1) given the physical pages the load event names (in logical order). */
export function pageSpans(pageSize: number, cols: Range, pages: readonly number[]): PageSpan[] {
  const [c0, c1] = cols;
  const out: PageSpan[] = [];
  const first = Math.floor(c0 / pageSize);
  for (let i = 0; i < pages.length; i++) {
    const logical = first + i;
    const k0 = Math.max(c0, logical * pageSize);
    const k1 = Math.min(c1, (logical + 1) * pageSize);
    out.push({ page: pages[i], logical, keys: [k0, k1], slots: [k0 - logical * pageSize, k1 - logical * pageSize] });
  }
  return out;
}

/** SMEM of the CTA that runs step `stepIndex` of a paged run (undefined for varlen runs or a step outside a CTA, e.g. the combine). */
export function smemAt(run: ServingRun, stepIndex: number): SmemState | undefined {
  if (run.layout !== 'paged') return undefined;
  const cur = run.steps[stepIndex];
  if (!cur || cur.qBlock < 0 || cur.kind === 'combine') return undefined;
  const stages = kvStagesOf(run.algorithm);
  if (stages === undefined) return undefined;
  const eb = run.dtype === 'fp32' ? 4 : 2;
  const { blockM, blockN } = run.blocks;
  const q: SmemBuffer = { name: 'sQ', stage: 0, bytes: blockM * run.d * eb };
  const k: SmemBuffer[] = Array.from({ length: stages }, (_, s) => ({ name: 'sK', stage: s, bytes: blockN * run.d * eb }));
  const v: SmemBuffer[] = Array.from({ length: stages }, (_, s) => ({ name: 'sV', stage: s, bytes: blockN * run.dv * eb }));
  let start = stepIndex;
  while (start > 0 && sameCta(run.steps[start - 1], cur)) start--;
  let tiles = 0;
  for (let i = start; i <= stepIndex; i++) {
    const s = run.steps[i];
    if (s.kind !== 'load') continue;
    if (s.tensors?.includes('Q')) {
      q.holds = s.rows;
      if (i === stepIndex) q.role = 'loading';
    }
    const hasK = s.tensors?.includes('K');
    const hasV = s.tensors?.includes('V');
    if ((hasK || hasV) && s.pages) {
      const st = tiles++ % stages;
      const spans = pageSpans(run.pageSize!, s.cols, s.pages);
      for (const [has, buf] of [
        [hasK, k[st]],
        [hasV, v[st]],
      ] as const) {
        if (!has) continue;
        buf.holds = s.cols;
        buf.spans = spans;
        if (i === stepIndex) buf.role = 'loading';
      }
    }
  }
  // A compute step reads the buffers that hold its keys.
  if (cur.kind !== 'load') {
    if (cur.kind !== 'write' && cur.kind !== 'normalize') q.role ??= 'reading';
    for (const buf of [...k, ...v]) {
      if (buf.holds && cur.cols[1] > cur.cols[0] && buf.holds[0] === cur.cols[0] && buf.holds[1] === cur.cols[1]) {
        const needs = buf.name === 'sK' ? ['qk'] : ['pv'];
        if (needs.includes(cur.kind)) buf.role = 'reading';
      }
    }
  }
  return { b: cur.b, h: cur.h, qBlock: cur.qBlock, split: cur.split, buffers: [q, ...k, ...v] };
}
