// Everything FlashScope knows about one algorithm, in one object: its forward stepper, its
// backward, its hardware schedules, its switches, where it starts, its tile table, what it
// supports and the few facts the views and the serving layouts ask about it. Each algorithm's
// folder exports one (engine/algorithms/<id>/descriptor.ts); registry.ts lists them. Code
// outside the folder asks the descriptor instead of comparing ids.

import type { BackwardAlgorithm } from '../backward/types.ts';
import type { AttentionProblem, DType } from '../core/problem.ts';
import type { GpuId } from '../hw/gpus/index.ts';
import type { HwAlgorithm } from '../hw/model.ts';
import { requireSupported, type Supports } from './capabilities.ts';
import type { FeatureSpecs } from './features.ts';
import type { StepAlgorithm } from './types.ts';

/** Where an algorithm starts when someone picks it (engine/defaults/algorithm-defaults.ts reads it). */
export interface AlgorithmDefaults {
  /** GPU of the hardware views; null for algorithms without a hardware model. */
  gpu: GpuId | null;
  dtype: DType;
  nq: number;
  nk: number;
  d: number;
  dv: number;
  /**
   * The tile the problem form starts on, for the exact algorithms, which size theirs from the
   * on-chip memory: small, so each tile is a few pixels wide. Kernels leave it out and run their own.
   */
  tile?: { blockM: number; blockN: number };
}

/** What a tile table depends on: head dims, dtype and the masks that change the kernel's tile. */
export type TileQuery = Pick<AttentionProblem, 'd' | 'dv' | 'dtype' | 'causal'> &
  Partial<Pick<AttentionProblem, 'window' | 'attentionChunk' | 'softcap'>>;

/**
 * How the forward keeps its running statistics, which decides what the heatmaps show:
 * 'materialized' (standard attention: all of S and P in HBM), 'hbm' (FA1: O, m and l
 * rewritten in HBM after every K/V block), 'on-chip' (FA2 onwards).
 */
export type RowStatsHome = 'materialized' | 'hbm' | 'on-chip';

export interface BackwardDescriptor {
  algorithm: BackwardAlgorithm;
  /** Its switches (the compare panes offer these when the shared problem runs the backward). */
  switches: FeatureSpecs;
  /** dQ is added into a shared fp32 buffer by every column block: the dQ accumulation view applies. */
  dqAccumulation: boolean;
  /** dQ and dK are kept without the softmax scale until the epilogue (FA3), which the formula view says. */
  scaleLater: boolean;
}

/** What the serving layouts (engine/layouts/: varlen batches, paged caches) ask of an algorithm. */
export interface ServingDescriptor {
  /** Its natural K/V tile width on a paged cache (absent: the FA1 on-chip-memory rule, engine/algorithms/blocks.ts). */
  pagedBlockN?: (p: AttentionProblem) => number;
  /** Bytes of one page-table entry it reads (int32 page ids; fmha_v2 keeps 64-bit pointers). */
  pageTableEntryBytes: number;
  /** K/V buffers per CTA in its hardware model, for the SMEM page view (absent: no page view). */
  smemKvStages?: number;
  /** Takes a split count (flash-decoding's split-KV). */
  splits: boolean;
  /** Preferred on a paged cache over the plain default (the decoding kernel). */
  pagedDefault?: boolean;
  /** One sentence the SMEM page view adds about its copies. */
  pageNote?: string;
}

export interface AlgorithmDescriptor<Id extends string = string> {
  readonly id: Id;
  /** Human name for menus. */
  readonly name: string;
  /** The algorithm as its kernel's authors name it (switch groups, tables). */
  readonly title: string;
  readonly forward: StepAlgorithm;
  /** Forward switches, each with its label, help text and the dtypes it applies to. */
  readonly switches: FeatureSpecs;
  readonly backward?: BackwardDescriptor;
  /** The forward kernel's hardware schedule (absent: numbers and trace only, no timing model). */
  readonly schedule?: HwAlgorithm;
  /** The backward kernel's schedule, which may be another id's (CuTe FA2 names FA2's SM80 backward). */
  readonly backwardSchedule?: HwAlgorithm;
  /** The GPU the backward kernel was written for (absent: the first the schedule runs on). */
  readonly backwardGpu?: GpuId;
  /** The dtype the backward starts on where its kernel refuses the forward's (its MMAs have no fp32 path). */
  readonly backwardDtype?: DType;
  /** A line the memory map adds about how the schedule's registers are split among its roles. */
  readonly registerNote?: string;
  readonly defaults: AlgorithmDefaults;
  /** The tile (Br × Bc) the forward runs when none is given: the one table everything reads. */
  readonly tiles: (p: TileQuery) => { blockM: number; blockN: number };
  /** What its kernels accept: capabilities.ts answers from it, and the kernels it declares refuse from it. */
  readonly supports: Supports;
  readonly rowStats: RowStatsHome;
  readonly serving: ServingDescriptor;
}

/** Keeps the literal id in the type, so the registry can derive the union of built-in ids. */
export function defineAlgorithm<const Id extends string>(d: AlgorithmDescriptor<Id>): AlgorithmDescriptor<Id> {
  if (d.forward.id !== d.id) throw new Error(`descriptor '${d.id}' holds the forward of '${d.forward.id}'`);
  if (d.backward && d.backward.algorithm.id !== d.id)
    throw new Error(`descriptor '${d.id}' holds the backward of '${d.backward.algorithm.id}'`);
  const { forward } = d;
  // Every forward refuses what its descriptor declares it does not take, before its first step.
  const run: StepAlgorithm['run'] = function* (p, x, o) {
    requireSupported(d.id, d.supports, 'forward', p);
    return yield* forward.run(p, x, o);
  };
  return { ...d, forward: { ...forward, run } };
}
