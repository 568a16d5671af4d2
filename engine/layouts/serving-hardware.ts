// What upstream's kernels make of a serving problem: the same varlen batch or paged cache the
// numeric run steps, handed to the hardware model as one shape (Hq/Hk, the sequences' lengths,
// the page size, the split count), with the configuration each kernel whose model mirrors
// upstream's dispatch picks (FA3, FA4), the upstream lines that pick it, and the simulated
// time and HBM bytes.

import { isFp8, type DType } from '../core/problem.ts';
import { gpuById, type GpuId } from '../hw/gpus/index.ts';
import { describeWith, simulateWith } from '../hw/registry.ts';
import { DESCRIPTORS } from '../algorithms/registry.ts';
import type { HwAlgorithm, ProblemShape } from '../hw/model.ts';
import type { PagedProblem } from './paged.ts';
import { seqLengths, type VarlenProblem } from './varlen.ts';

interface KernelOnGpu {
  algorithm: string;
  name: string;
  gpu: GpuId;
  schedule: HwAlgorithm;
}

let servingKernels: KernelOnGpu[] | undefined;

/**
 * The kernels the serving page asks about: those whose hardware model mirrors upstream's
 * dispatch (their resource sheet names what upstream picks and why), each on its own GPU.
 */
export function servingKernelList(): readonly KernelOnGpu[] {
  servingKernels ??= DESCRIPTORS.flatMap((d) => {
    const { gpu, nq, nk, d: hd, dv, dtype } = d.defaults;
    const schedule = d.schedule;
    if (!schedule || !gpu) return [];
    const sheet = describeWith(schedule, gpu, { batch: 1, hq: 1, hk: 1, nq, nk, d: hd, dv, dtype, causal: false });
    return sheet.upstream ? [{ algorithm: d.id, name: schedule.name.replace(/ \(.*\)$/, ''), gpu, schedule }] : [];
  });
  return servingKernels;
}

export interface ServingKernel {
  algorithm: string;
  name: string;
  gpu: string;
  gpuName: string;
  /** Why the kernel does not run this problem (upstream's refusal, or what does not fit); the rest is absent then. */
  refused?: string;
  upstream?: { config: Record<string, number | string | boolean>; why: string[] };
  time_us?: number;
  tflops?: number;
  hbm_bytes?: number;
  bound?: 'schedule' | 'hbm';
}

export interface ServingHardware {
  /** The problem as the hardware model takes it. */
  shape: ProblemShape;
  /** The precision the run's inputs have, when the kernels take them in another (fp32 runs as bf16). */
  runDtype?: DType;
  kernels: ServingKernel[];
}

/** The kernels take 16-bit or FP8 inputs; an fp32 (or fp64) problem runs as bf16. */
const kernelDtype = (d: DType): DType => (d === 'fp16' || d === 'bf16' || isFp8(d) ? d : 'bf16');

/**
 * A varlen batch as upstream's varlen kernels take it: cu_seqlens_q / cu_seqlens_k, with
 * max_seqlen_q / max_seqlen_k as nq / nk.
 */
export function varlenKernelShape(vp: VarlenProblem, numSplits?: number): ProblemShape {
  const seqlensQ = seqLengths(vp.cuSeqlensQ);
  const seqlensK = seqLengths(vp.cuSeqlensK);
  const b = vp.base;
  return {
    batch: seqlensQ.length,
    hq: b.hq,
    hk: b.hk,
    nq: Math.max(1, ...seqlensQ),
    nk: Math.max(1, ...seqlensK),
    d: b.d,
    dv: b.dv,
    dtype: kernelDtype(b.dtype),
    causal: b.causal,
    varlen: { seqlensQ, seqlensK, seqused: false },
    ...(numSplits !== undefined ? { numSplits } : {}),
  };
}

/**
 * A paged cache as upstream's paged kernels take it: seqlen_k is the block table's width in
 * tokens, each sequence's own length comes as seqused_k, page_size is the cache's second dim.
 */
export function pagedKernelShape(pp: PagedProblem, numSplits?: number): ProblemShape {
  const b = pp.base;
  return {
    batch: pp.batch,
    hq: b.hq,
    hk: b.hk,
    nq: pp.nq,
    nk: pp.maxPages * pp.pageSize,
    d: b.d,
    dv: b.dv,
    dtype: kernelDtype(b.dtype),
    causal: b.causal,
    pageSize: pp.pageSize,
    varlen: { seqlensK: [...pp.cacheSeqlens], seqused: true },
    ...(numSplits !== undefined ? { numSplits } : {}),
  };
}

function kernelFor(k: KernelOnGpu, shape: ProblemShape): ServingKernel {
  const head = { algorithm: k.algorithm, name: k.name, gpu: k.gpu, gpuName: gpuById(k.gpu).name };
  try {
    const sheet = describeWith(k.schedule, k.gpu, shape);
    if (sheet.does_not_fit.length > 0) return { ...head, upstream: sheet.upstream, refused: sheet.does_not_fit.join('; ') };
    const sim = simulateWith(k.schedule, k.gpu, shape);
    return { ...head, upstream: sheet.upstream, time_us: sim.time_us, tflops: sim.tflops, hbm_bytes: sim.hbm_bytes, bound: sim.bound };
  } catch (e) {
    return { ...head, refused: e instanceof Error ? e.message : String(e) };
  }
}

/** Each serving kernel's configuration and simulated figures for the shape. */
export function servingHardware(shape: ProblemShape, runDtype: DType): ServingHardware {
  return {
    shape,
    ...(runDtype !== shape.dtype ? { runDtype } : {}),
    kernels: servingKernelList().map((k) => kernelFor(k, shape)),
  };
}
