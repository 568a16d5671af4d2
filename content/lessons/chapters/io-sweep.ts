// Chapter 4's measurement: FA1 run counters-only (no trace) for several on-chip memory sizes
// M, against the paper's bound Θ(N²d²/M). Pure engine calls; the lesson worker runs it so
// the page never waits on it.

import { algorithmById, blocksFromSram, randomInputs, type AttentionProblem, runToEnd } from '../../../engine/api.ts';
import { hbmTotal } from './queries.ts';

export interface IoPoint {
  sramBytes: number;
  /** M in fp32 words, the unit of the paper's bound. */
  words: number;
  blockM: number;
  blockN: number;
  /** Total HBM bytes read and written, from the engine's counters. */
  hbmBytes: number;
  /** N_q N_k d² / M (elements). */
  bound: number;
}

export const SWEEP_PROBLEM: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 256, nk: 256, d: 16, dv: 16, causal: false, dtype: 'fp32' };
export const SWEEP_SRAM = [1024, 2048, 4096, 8192, 16384];

/** Standard attention's HBM bytes for the same problem, counters-only: the baseline the sweep is read against. */
export function standardIoBytes(p: AttentionProblem = SWEEP_PROBLEM): number {
  const x = randomInputs(p, { seed: 1, distribution: 'normal' });
  return hbmTotal(runToEnd(algorithmById('standard'), p, x, { trace: false }).counters);
}

export function fa1IoSweep(p: AttentionProblem = SWEEP_PROBLEM, sram: readonly number[] = SWEEP_SRAM): IoPoint[] {
  const x = randomInputs(p, { seed: 1, distribution: 'normal' });
  return sram.map((sramBytes) => {
    const r = runToEnd(algorithmById('fa1'), p, x, { sramBytes, trace: false });
    const words = sramBytes / 4;
    const b = blocksFromSram(sramBytes, p.d);
    return {
      sramBytes,
      words,
      blockM: b.blockM,
      blockN: b.blockN,
      hbmBytes: hbmTotal(r.counters),
      bound: (p.nq * p.nk * p.d * p.d) / words,
    };
  });
}
