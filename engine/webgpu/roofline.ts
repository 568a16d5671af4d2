// Roofline of one WebGPU run: what the kernel spends of each resource, counted from its
// structure (flash-matrix-kernel.ts, backward-matrix-kernel.ts, the decoding kernels), and the
// time each would take alone at its measured ceiling (ceilings.ts). The largest is the classic
// roofline bound; their sum is the bound where the phases do not overlap, which is what one
// workgroup per SM with a barrier between the MMAs and the softmax gives.

import { type AttentionProblem, nominalFlops } from '../core/problem.ts';
import type { Ceilings } from './ceilings.ts';

/** What one run spends, summed over all workgroups. */
export interface KernelCounts {
  /** Subgroup-matrix multiply-accumulate FLOPs. */
  mmaFlops: number;
  /** Of those, the FLOPs of MMAs that load both operands from workgroup memory (P·V, and the backward's). */
  mmaFlopsBothLoaded: number;
  /** Element accesses to workgroup memory outside matrix loads (staging stores, S/P and dS round trips, matrix stores). */
  workgroupAccesses: number;
  exps: number;
  /** workgroupBarrier() calls, summed over workgroups. */
  barriers: number;
  /** Bytes each tensor needs from storage at least once (Q, K, V read, O and LSE written). */
  storageBytes: number;
  /** i32 atomicAdds to storage (the matrix backward's dQ). */
  atomics: number;
}

export type RooflineKernel = 'forward' | 'backward' | 'decode';

export type Resource = 'mma' | 'workgroup' | 'exp' | 'barrier' | 'storage' | 'atomic';

export const RESOURCE_LABEL: Record<Resource, string> = {
  mma: 'subgroup-matrix MMA',
  workgroup: 'workgroup memory (outside matrix loads)',
  exp: 'exp2',
  barrier: 'workgroup barriers',
  storage: 'storage (each tensor once)',
  atomic: 'atomic adds to storage',
};

/** Query blocks × the key tiles each sees (bottom-right causal alignment, as the kernels). */
export function visibleTiles(p: Pick<AttentionProblem, 'nq' | 'nk' | 'causal'>, bm: number, bn: number): number {
  let tiles = 0;
  for (let r0 = 0; r0 < p.nq; r0 += bm) {
    const keys = p.causal ? Math.max(0, Math.min(p.nk, Math.min(r0 + bm, p.nq) + p.nk - p.nq)) : p.nk;
    tiles += Math.ceil(keys / bn);
  }
  return tiles;
}

/** Bytes of Q, K, V (element size `eb`) read once and O, LSE (f32) written once. */
export function uniqueBytes(p: AttentionProblem, eb: number): number {
  return p.batch * (p.hq * p.nq * p.d + p.hk * p.nk * (p.d + p.dv)) * eb + p.batch * p.hq * p.nq * (p.dv + 1) * 4;
}

/**
 * flash-matrix forward, per (query block of BM rows, key tile of BN): Q·Kᵀ and P·V MMAs; K and V
 * staged (BN·(d + dv) stores); S stored by the matrix store, read by the softmax lanes, P
 * written (3·BM·BN); BM·BN exp2; two barriers (flash-matrix-kernel.ts, tileLoopWgsl).
 */
export function forwardCounts(p: AttentionProblem, bm: number, bn: number): KernelCounts {
  const tiles = p.batch * p.hq * visibleTiles(p, bm, bn);
  return {
    mmaFlops: tiles * 2 * bm * bn * (p.d + p.dv),
    mmaFlopsBothLoaded: tiles * 2 * bm * bn * p.dv,
    workgroupAccesses: tiles * (3 * bm * bn + bn * (p.d + p.dv)),
    exps: tiles * bm * bn,
    barriers: tiles * 2,
    storageBytes: uniqueBytes(p, 2),
    atomics: 0,
  };
}

/**
 * flash-matrix backward, per (key block of BN, query tile of BM): Sᵀ, dPᵀ, dV, dK and dQ MMAs;
 * Q and dO staged; Sᵀ and dPᵀ stored, read by lanes, Pᵀ and dSᵀ written (6·BM·BN); the dQ
 * block stored and read for the adds (2·BM·d); BM·BN exp2; four barriers; BM·d atomic adds
 * (backward-matrix-kernel.ts, header).
 */
export function backwardCounts(p: AttentionProblem, bm: number, bn: number): KernelCounts {
  // The kernel walks query tiles per key block; the visible pairs are the forward's, transposed.
  const tiles = p.batch * p.hq * visibleTiles(p, bm, bn);
  return {
    mmaFlops: tiles * 2 * bm * bn * (3 * p.d + 2 * p.dv),
    mmaFlopsBothLoaded: tiles * 2 * bm * bn * (3 * p.d + 2 * p.dv),
    workgroupAccesses: tiles * (bm * (p.d + p.dv) + 6 * bm * bn + 2 * bm * p.d),
    exps: tiles * bm * bn,
    barriers: tiles * 4,
    storageBytes: 2 * uniqueBytes(p, 2) + p.batch * p.hq * p.nq * p.d * 4,
    atomics: tiles * bm * p.d,
  };
}

/** Decoding (one or a few query rows per key head): a stream of f16 K/V; one exp2 per score; its MMAs are not counted. */
export function decodeCounts(p: AttentionProblem): KernelCounts {
  return {
    mmaFlops: 0,
    mmaFlopsBothLoaded: 0,
    workgroupAccesses: 0,
    exps: p.batch * p.hq * p.nq * p.nk,
    barriers: 0,
    storageBytes: uniqueBytes(p, 2),
    atomics: 0,
  };
}

export interface RooflineBound {
  resource: Resource;
  /** Seconds the resource alone needs at its ceiling. */
  seconds: number;
  /** The ceiling used, in its unit, for display. */
  ceiling: string;
}

export interface Roofline {
  kernel: RooflineKernel;
  counts: KernelCounts;
  bounds: RooflineBound[];
  /** The largest bound: the classic roofline's binding resource. */
  binding: RooflineBound;
  /** Sum of the bounds: the time with no overlap between resources. */
  sumSeconds: number;
  measuredSeconds: number;
  /** binding.seconds / measured: the fraction of the binding ceiling the run reaches. */
  fractionOfBinding: number;
  /** sumSeconds / measured. */
  fractionOfSum: number;
  /** Nominal FLOP/s of the run (the bench's convention) and the MMA FLOPs per workgroup-memory and storage byte. */
  achievedFlops: number;
  workgroupIntensity: number;
  storageIntensity: number;
  ceilingsSource: string;
}

const tflops = (x: number) => `${(x / 1e12).toFixed(0)} TFLOP/s`;

export function roofline(kernel: RooflineKernel, p: AttentionProblem, counts: KernelCounts, c: Ceilings, measuredMs: number): Roofline {
  const oneLoaded = counts.mmaFlops - counts.mmaFlopsBothLoaded;
  const all: RooflineBound[] = [
    {
      resource: 'mma',
      seconds: oneLoaded / c.mmaWorkgroupRight + counts.mmaFlopsBothLoaded / c.mmaWorkgroupBoth,
      ceiling: `${tflops(c.mmaWorkgroupRight)} one operand loaded, ${tflops(c.mmaWorkgroupBoth)} both`,
    },
    {
      resource: 'workgroup',
      seconds: (counts.workgroupAccesses * 4) / c.workgroupBytes,
      ceiling: `${(c.workgroupBytes / 1e12).toFixed(1)} TB/s (4 B an access)`,
    },
    { resource: 'exp', seconds: counts.exps / c.expPerSecond, ceiling: `${(c.expPerSecond / 1e12).toFixed(2)} Texp/s` },
    {
      resource: 'barrier',
      seconds: counts.barriers * c.barrierSeconds,
      ceiling: `${(c.barrierSeconds * 1e9).toFixed(3)} ns a barrier, GPU-wide`,
    },
    { resource: 'storage', seconds: counts.storageBytes / c.storageBytes, ceiling: `${(c.storageBytes / 1e12).toFixed(2)} TB/s` },
    { resource: 'atomic', seconds: counts.atomics / c.atomicsPerSecond, ceiling: `${(c.atomicsPerSecond / 1e9).toFixed(0)} G adds/s` },
  ];
  const bounds = all.filter((b) => b.seconds > 0);
  const binding = bounds.reduce((a, b) => (b.seconds > a.seconds ? b : a));
  const sumSeconds = bounds.reduce((s, b) => s + b.seconds, 0);
  const measuredSeconds = measuredMs / 1e3;
  const flops = kernel === 'backward' ? 2.5 * nominalFlops(p) : nominalFlops(p);
  return {
    kernel,
    counts,
    bounds,
    binding,
    sumSeconds,
    measuredSeconds,
    fractionOfBinding: binding.seconds / measuredSeconds,
    fractionOfSum: sumSeconds / measuredSeconds,
    achievedFlops: flops / measuredSeconds,
    workgroupIntensity: counts.workgroupAccesses > 0 ? counts.mmaFlops / (counts.workgroupAccesses * 4) : 0,
    storageIntensity: flops / counts.storageBytes,
    ceilingsSource: c.source,
  };
}

/** The tile a run's configuration text names: "BM=128 BN=32" (forward) or "(BN 128), query tiles of 16 rows" (backward). */
export function tileFromConfig(config: string): { bm: number; bn: number } | undefined {
  const f = /BM=(\d+) BN=(\d+)/.exec(config);
  if (f) return { bm: Number(f[1]), bn: Number(f[2]) };
  const b = /\(BN (\d+)\), query tiles of (\d+) rows/.exec(config);
  if (b) return { bm: Number(b[2]), bn: Number(b[1]) };
  return undefined;
}

/**
 * The roofline of a panel run where the counts are known: flash-matrix forward and backward
 * (tile from the configuration text) and decoding (Nq ≤ 16). Undefined elsewhere (the f32 and
 * standard paths run on plain arithmetic, whose ceiling is not measured here).
 */
export function rooflineOfRun(
  r: { pass: 'forward' | 'backward'; path: string; config: string; ms: number },
  p: AttentionProblem,
  c: Ceilings,
): Roofline | undefined {
  if (r.path === 'decode' && r.pass === 'forward') return roofline('decode', p, decodeCounts(p), c, r.ms);
  if (r.path !== 'flash-matrix') return undefined;
  const tile = tileFromConfig(r.config);
  if (!tile) return undefined;
  return r.pass === 'forward'
    ? roofline('forward', p, forwardCounts(p, tile.bm, tile.bn), c, r.ms)
    : roofline('backward', p, backwardCounts(p, tile.bm, tile.bn), c, r.ms);
}

/** One line: the binding ceiling and the sum of all, each with the fraction of the measured time. */
export function describeRoofline(r: Roofline): string {
  const ms = (x: number) => `${(x * 1e3).toFixed(3)} ms`;
  const each = r.bounds.map((b) => `${b.resource} ${ms(b.seconds)}`).join(', ');
  return `roofline (${r.ceilingsSource}): binds ${r.binding.resource} ${ms(r.binding.seconds)} = ${r.fractionOfBinding.toFixed(2)} of the measured ${ms(r.measuredSeconds)}; sum ${ms(r.sumSeconds)} = ${r.fractionOfSum.toFixed(2)} (${each})`;
}
