// What every hardware schedule shares: the problem shape it is built for, its switchable
// features, the cost of each kind of work on a given GPU, and the shape of a schedule
// module. The schedules themselves live beside each algorithm (engine/algorithms/<id>/schedule.ts).

import type { MaskSpec } from '../core/mask-spec.ts';
import { dtypeBytes, isFp8, type DType, type ProblemDims, type SlidingWindow } from '../core/problem.ts';
import type { FeatureSpec } from '../algorithms/features.ts';
import type { PhaseKind } from '../trace/events.ts';
import type { SchedulePhase, ResourceSheet } from './events.ts';
import type { GpuSpec } from './gpus/index.ts';
import type { Kernel, MemSpec } from './scheduler.ts';

/**
 * The problem as the hardware model takes it: the numeric engine's problem (dims, dtype, masks,
 * softcap) plus what only decides the kernel's configuration (paging, varlen, splits). nq and
 * nk are max_seqlen_q / max_seqlen_k when varlen is given. New fields go here, nowhere else.
 */
export interface ProblemShape extends ProblemDims {
  dtype: DType;
  causal: boolean;
  /** Sliding window around the bottom-right-aligned diagonal; -1 = unbounded on that side. */
  window?: SlidingWindow;
  /** Logit softcap (> 0). */
  softcap?: number;
  /** The problem's mask_mod / score_mod: with a mask_mod the kernel runs block-sparse (CTAs visit only blocks with a visible key). */
  mask?: MaskSpec;
  /** Chunked attention (FA3's attention_chunk): keys only within the query's chunk. */
  attentionChunk?: number;
  /** Paged KV cache: tokens per page (the block table does not change the configuration). */
  pageSize?: number;
  /** Packed variable-length batch: the per-sequence lengths (cu_seqlens differences, or seqused). */
  varlen?: { seqlensQ?: number[]; seqlensK?: number[]; seqused?: boolean };
  /** K/V splits: undefined = the kernel's default, 0 = its heuristic, N = forced. */
  numSplits?: number;
  /** GQA packing: undefined = the kernel's heuristic. */
  packGqa?: boolean;
  /**
   * Set by packShape only: the kernel tiles Q heads packed per KV head, so hq = hk and nq counts
   * packed rows (seqlen_q × packRatio, the Q heads of a KV head interleaved per query row).
   */
  packRatio?: number;
}

/** The problem as a GQA-packing kernel tiles it (flash_attn/cute/pack_gqa.py@0251105a, pack_gqa_layout). */
export function packShape(shape: ProblemShape, ratio: number): ProblemShape {
  if (ratio <= 1 || shape.packRatio !== undefined) return shape;
  return { ...shape, hq: shape.hk, nq: shape.nq * ratio, packRatio: ratio };
}

/** The problem as given, from a packed one. */
export function unpackShape(shape: ProblemShape): ProblemShape {
  if (shape.packRatio === undefined) return shape;
  const { packRatio, ...rest } = shape;
  return { ...rest, hq: shape.hk * packRatio, nq: shape.nq / packRatio };
}

/** Per-sequence shapes of a varlen batch (batch 1 each), or the shape itself when dense. */
export function sequencesOf(shape: ProblemShape): ProblemShape[] {
  const v = shape.varlen;
  if (!v || (!v.seqlensQ && !v.seqlensK)) return [shape];
  const r = shape.packRatio ?? 1;
  return Array.from({ length: shape.batch }, (_, b) => ({
    ...shape,
    batch: 1,
    nq: (v.seqlensQ?.[b] ?? shape.nq / r) * r,
    nk: v.seqlensK?.[b] ?? shape.nk,
  }));
}

/** Every switch the hardware models know. Each algorithm accepts only its own. */
export interface HwFeatures {
  /** FA3: two consumer warpgroups take turns on the tensor cores (named barriers). */
  pingpong: boolean;
  /** FA3: S_next = Q·K_j issued before O += P·V_{j-1}, softmax under the second GEMM. */
  intraOverlap: boolean;
  /** FA4: correction warps rescale O only when a row max grew by more than 8 (log2 units). */
  lazyRescale: boolean;
  /** FA4: part of the exponentials evaluated by a cubic polynomial on the FMA pipes. */
  exp2Emulation: boolean;
  /** FA3/FA4/fmha_v2: K/V pipeline depth; undefined = the kernel's own choice. */
  stages?: number;
  /** flash-decoding: K/V splits per (batch, head); undefined = chosen to fill the SMs. */
  splits?: number;
  /**
   * FA4 with lazy rescaling: the K/V iterations (0-based, in visiting order) at which some
   * row's max grew past the threshold, as the numeric run found them. Absent: none after
   * the first block, the usual case once the first block has set the row max.
   */
  rescaleAt?: number[];
  /**
   * Backward (FA3): the column blocks add into each dQ row block in a fixed order (a
   * semaphore per row block), so the fp32 sums come out bit-identical run to run.
   */
  deterministic?: boolean;
}

export const DEFAULT_FEATURES: HwFeatures = { pingpong: true, intraOverlap: true, lazyRescale: true, exp2Emulation: true };

export type FeatureKey =
  | 'pingpong'
  | 'intraOverlap'
  | 'lazyRescale'
  | 'exp2Emulation'
  | 'stages'
  | 'splits'
  | 'rescaleAt'
  | 'deterministic';

/** A switch as a schedule takes it: the algorithm's own feature spec where it has one (label, help). */
export type HwSwitchSpec = Pick<FeatureSpec<boolean | number>, 'doc' | 'label'> & {
  /** Why the kernel has nothing for this switch to change at this shape; undefined when it has. */
  absent?: (shape: ProblemShape) => string | undefined;
};
export type HwSwitches = Partial<Record<FeatureKey, HwSwitchSpec>>;

/** K/V pipeline depth, a switch of every TMA or cp.async ring the schedules model. */
export const STAGES_SWITCH: HwSwitchSpec = { doc: 'K/V pipeline depth (ring slots); absent: the kernel’s own choice' };
/** FA4's lazy rescaling as the numeric run decided it, handed to the schedule. */
export const RESCALE_AT_SWITCH: HwSwitchSpec = {
  doc: 'the K/V iterations (0-based) at which some row’s max grew past the threshold, as the numeric run found them',
};

export function featureKeysOf(algo: HwAlgorithm): FeatureKey[] {
  return Object.keys(algo.switches) as FeatureKey[];
}

/**
 * A switch as the hardware views show it; `toggle`: an on/off switch the timeline offers;
 * `absent`: why the kernel has nothing for it to change at this shape (shown disabled).
 */
export interface HwViewSwitch {
  key: FeatureKey;
  label: string;
  doc: string;
  toggle: boolean;
  absent?: string;
}

export function viewSwitchesOf(algo: HwAlgorithm, shape: ProblemShape): HwViewSwitch[] {
  return featureKeysOf(algo).map((key) => {
    const s = algo.switches[key]!;
    const absent = s.absent?.(shape);
    return {
      key,
      label: s.label ?? key,
      doc: s.doc,
      toggle: typeof (DEFAULT_FEATURES as unknown as Record<string, unknown>)[key] === 'boolean',
      ...(absent ? { absent } : {}),
    };
  });
}

/** The hardware commands' flag of a switch: --no-x turns off what is on by default, --x sets the rest. */
export function flagOf(key: FeatureKey): string {
  if (key === 'rescaleAt') return key;
  const kebab = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  return (DEFAULT_FEATURES as unknown as Record<string, unknown>)[key] === true ? `--no-${kebab}` : `--${kebab}`;
}

/** One CTA's share of the problem: its Q rows and the K/V blocks it visits, in order. */
export interface CtaWork {
  b: number;
  h: number;
  /** First Q block (of block_m rows) this CTA owns. */
  qBlock: number;
  /** The K/V blocks it visits, [kvFrom, kvTo): a contiguous range (causal masks and splits cut ranges). */
  kvFrom: number;
  kvTo: number;
  /** Under a mask_mod: the blocks of that range it visits, ascending (the others are empty). */
  kvList?: number[];
  /**
   * Block-sparse FA4: the blocks of kvList upstream lists as full (full_block_idx), walked after
   * the partial ones, each list from its last block down (block_sparse_utils.py@0251105a l. 1096-1134).
   */
  kvFull?: number[];
  /** Visited from the last block down (FA3, FA4: the diagonal block is masked first). */
  reverse: boolean;
  /** Split index (flash-decoding), 0 otherwise. */
  split: number;
}

export interface BuildContext {
  gpu: GpuSpec;
  shape: ProblemShape;
  features: HwFeatures;
  /** Co-resident CTAs on the SM; roles and barriers are prefixed "ctaN/" when > 1. */
  ctaIndex: number;
  ctaCount: number;
  /** Bytes per cycle one SM's copies get (its own limit, or its share of L2/HBM when all SMs load). */
  loadBytesPerClk: number;
  /** The schedule is drawn: a kernel launched after the main one (FA3's combine) follows this SM's CTAs; simulate times it apart. */
  drawn: boolean;
}

export interface HwAlgorithm {
  id: string;
  name: string;
  /** Architectures the kernel exists for. */
  arch: readonly number[];
  /** Feature switches this algorithm accepts, with their specs. */
  switches: HwSwitches;
  resources(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): ResourceSheet;
  /** The CTAs of the grid (for the wave model); causal grids list the visible K/V blocks of each. */
  grid(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): CtaWork[];
  /** Adds one CTA's roles, barriers and buffers to the kernel. */
  build(k: Kernel, ctx: BuildContext, work: CtaWork): void;
  /** K/V blocks (summed over sub-units) a CTA runs the masking step on: simulate times CTAs alike in block count and in this once. Absent: no per-block masking cost. */
  maskedSteps?(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures, work: CtaWork): number;
  /** Kernels launched around the main one (flash-decoding's combine; the backward's preprocessing and dQ conversion), in microseconds. */
  epilogueKernelUs?(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): number;
  /** FLOPs the TFLOP/s figure is quoted for; default the forward's nominal count (backward.ts: 2.5 × that). */
  flops?(shape: ProblemShape): number;
  /** Extra kernel time the one-SM model cannot see (the backward's deterministic dQ ordering across CTAs), in microseconds. */
  crossCtaUs?(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures, waves: number): number;
  /**
   * Q rows one CTA owns and the rows of each sub-unit its ops name (FA4: a Q stage; FA3: a
   * consumer warpgroup; the SM80-style kernels: a warp), from its sheet. Backward schedules:
   * keys per CTA and per consumer warpgroup. Absent: one unit of the whole block.
   */
  geometry?(sheet: ResourceSheet, shape: ProblemShape): { ctaRows: number; subRows: number };
  /** The K/V tile the kernel runs at this shape where the dispatch moves it (FA4's tile_n 64), for the numeric stepper to step the same. */
  kvTile?(shape: ProblemShape): { blockN: number } | undefined;
  /** The tile scheduler hands out the longest CTAs first on causal grids (FA3, FA4's main kernel); a function where the shape decides. */
  longestFirst?: boolean | ((shape: ProblemShape) => boolean);
  /**
   * The tile scheduler is static persistent: one CTA per SM (or pair), CTA c running tiles c,
   * c + grid, c + 2·grid, … of the grid order whatever they cost, instead of the next tile when it
   * frees (FA3's and FA4's StaticPersistentTileScheduler where their dispatch picks it).
   */
  staticPersistent?(shape: ProblemShape, gpu: GpuSpec): boolean;
  /** K/V are streamed once per CTA with no reuse through L2 (decoding): copies share HBM, not L2. */
  streamsKv?: boolean;
  /** Bytes that must come from HBM at least once (the roofline floor). */
  hbmBytes(shape: ProblemShape, f: HwFeatures, gpu: GpuSpec): number;
}

/** An op's phase (events.ts SchedulePhase): kinds, K/V block, sub-unit and, for copies, the tensors. */
export function phase(kinds: PhaseKind[], kv: number | null = null, sub: number | null = null, tensors?: string[]): SchedulePhase {
  return tensors ? { kinds, kv, sub, tensors } : { kinds, kv, sub };
}

export function elemBytes(dtype: DType): number {
  return dtypeBytes(dtype);
}

export function ceilDiv(a: number, b: number): number {
  return Math.ceil(a / b);
}

export function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** Cycles of one MMA of M×N×K on a unit delivering `flopsPerClk`. */
export function mmaCycles(m: number, n: number, k: number, flopsPerClk: number): number {
  return (2 * m * n * k) / flopsPerClk;
}

/** Dense MMA FLOPs per clock per SM for a dtype; a chip without FP8 MMAs is refused by requireHalf first (the 16-bit rate keeps the sheet finite). */
export function tensorRate(gpu: GpuSpec, dtype: DType): number {
  const t = gpu.tensorFlopsPerClk;
  return isFp8(dtype) ? (t.fp8 ?? t.fp16) : t[dtype];
}

/**
 * FMA-pipe operations per S element of one online-softmax step, counted the way the
 * kernels write it: row max (1), scale-and-subtract as one FFMA (1), row-sum add (1),
 * conversion to 16 bits packed two per instruction (0.5).
 */
export const SOFTMAX_FMA_OPS = 3.5;

/**
 * FMA-pipe operations to evaluate one exp2 with FA4's polynomial: split into integer and
 * fraction (2), a cubic in Horner form (3 FFMA), and the exponent add into the bits (1).
 */
export const EXP2_POLY_FMA_OPS = 6;

/** Per-role prefixes when several CTAs share the SM. */
export function prefix(ctx: BuildContext): string {
  return ctx.ctaCount > 1 ? `cta${ctx.ctaIndex}/` : '';
}

/** Visible K/V blocks [from, to) of Q rows [r0, r1): the causal mask and the window, bottom-right aligned. */
export function visibleKvRange(shape: ProblemShape, r0: number, r1: number, blockN: number): [number, number] {
  return kvBlockRange(shape, r0, r1, blockN);
}

/**
 * The K/V blocks [min, max) a CTA of (packed) rows [m0, m1) loads, as upstream's
 * get_n_block_min_max computes them (flash_attn/cute/block_info.py@0251105a l. 27-68; hopper/
 * block.h the same): the right edge from the causal diagonal or the window's right side, the
 * left edge from the window's left side; packed GQA rows are divided by the heads per KV head.
 * With splits, split `split` of `splits` takes its share of that range.
 */
export function kvBlockRange(
  shape: ProblemShape,
  m0: number,
  m1: number,
  blockN: number,
  split = 0,
  splits = 1,
  chunk = 0,
): [number, number] {
  const packRatio = shape.packRatio ?? 1;
  let nMax = ceilDiv(shape.nk, blockN);
  const wl = shape.window && shape.window.left >= 0 ? shape.window.left : undefined;
  const wr = shape.window && shape.window.right >= 0 ? shape.window.right : undefined;
  const right = shape.causal ? Math.min(0, wr ?? 0) : wr;
  const offset = shape.nk - shape.nq / packRatio;
  const nIdxMax = ceilDiv(m1, packRatio) + offset;
  const nIdxMin = Math.floor(m0 / packRatio) + offset;
  // FA3's attention_chunk: keys from the chunk of the tile's first row to the end of its last row's chunk (block.h@0251105a l. 30-32, 41-43).
  const rightEdge = Math.min(
    right !== undefined ? nIdxMax + right : Number.POSITIVE_INFINITY,
    chunk > 0 ? chunkUp(nIdxMax, chunk) : Number.POSITIVE_INFINITY,
  );
  if (Number.isFinite(rightEdge)) nMax = Math.max(0, Math.min(nMax, ceilDiv(rightEdge, blockN)));
  let nMin = 0;
  const leftEdge = Math.max(
    wl !== undefined ? nIdxMin - wl : Number.NEGATIVE_INFINITY,
    chunk > 0 ? chunkDown(nIdxMin, chunk) : Number.NEGATIVE_INFINITY,
  );
  if (Number.isFinite(leftEdge)) nMin = Math.max(0, Math.floor(leftEdge / blockN));
  if (splits > 1) {
    const per = nMax <= nMin ? 0 : ceilDiv(nMax - nMin, splits);
    nMin += split * per;
    nMax = Math.min(nMin + per, nMax);
  }
  return nMax <= nMin ? [nMin, nMin] : [nMin, nMax];
}

/** flash::round_up and round_down of hopper/utils.h@0251105a l. 110-117 (floor division, so negative indices round alike). */
export const chunkUp = (n: number, chunk: number): number => (Math.floor((n - 1) / chunk) + 1) * chunk;
export const chunkDown = (n: number, chunk: number): number => Math.floor(n / chunk) * chunk;

/** Does K/V block j reach past the causal diagonal for Q rows starting at row0 (so it must be masked inside)? */
export function crossesDiagonal(shape: ProblemShape, row0: number, j: number, blockN: number): boolean {
  const r = shape.packRatio ?? 1;
  return shape.causal && (j + 1) * blockN - 1 > Math.floor(row0 / r) + shape.nk - shape.nq / r;
}

export function kvCount(w: CtaWork): number {
  return w.kvList ? w.kvList.length : Math.max(0, w.kvTo - w.kvFrom);
}

/** The K/V block indices of a CTA in visiting order. */
export function kvBlocksOf(w: CtaWork): number[] {
  if (w.kvList && w.kvFull) {
    const full = new Set(w.kvFull);
    return [...w.kvList.filter((j) => !full.has(j)).reverse(), ...[...w.kvFull].reverse()];
  }
  if (w.kvList) return w.reverse ? [...w.kvList].reverse() : [...w.kvList];
  const n = kvCount(w);
  return Array.from({ length: n }, (_, i) => (w.reverse ? w.kvTo - 1 - i : w.kvFrom + i));
}

export function emptySheet(algo: string, gpu: GpuSpec, blockM: number, blockN: number): ResourceSheet {
  return {
    algo,
    gpu: gpu.id,
    smem: { capacity_bytes: gpu.smemPerCtaBytes, used_bytes: 0, buffers: [] },
    tmem: gpu.tmem ? { lanes: gpu.tmem.lanes, columns: gpu.tmem.columns, used_columns: 0, buffers: [] } : null,
    roles: [],
    registers: { per_sm: gpu.registersPerSm, used: 0 },
    tiles: { block_m: blockM, block_n: blockN },
    q_stage: 1,
    kv_stage: 1,
    ctas_per_sm: 0,
    does_not_fit: [],
    notes: [],
  };
}

/** Lays buffers out in SMEM in order, each aligned, and records them on the sheet. Returns the offsets. */
export function layoutSmem(
  sheet: ResourceSheet,
  items: { name: string; stages: number; bytes: number; align?: number }[],
): Record<string, number[]> {
  let off = sheet.smem.used_bytes;
  const out: Record<string, number[]> = {};
  for (const it of items) {
    const a = it.align ?? 128;
    off = Math.ceil(off / a) * a;
    out[it.name] = [];
    for (let s = 0; s < it.stages; s++) {
      sheet.smem.buffers.push({ name: it.name, stage: s, offset: off, bytes: it.bytes });
      out[it.name].push(off);
      off += it.bytes;
    }
  }
  sheet.smem.used_bytes = off;
  return out;
}

/** setmaxnreg takes 24 to 256 registers per thread (PTX ISA, setmaxnreg), one more than the compiler's own cap. */
export const SETMAXNREG_MAX = 256;

/**
 * Fills in registers, occupancy and the does-not-fit lines once buffers and roles are on the
 * sheet. `setmaxnreg`: the roles' counts are set with setmaxnreg, whose ceiling is 256.
 */
export function finishSheet(sheet: ResourceSheet, gpu: GpuSpec, setmaxnreg = false): ResourceSheet {
  let regs = 0;
  let threads = 0;
  const cap = setmaxnreg ? Math.max(gpu.maxRegistersPerThread, SETMAXNREG_MAX) : gpu.maxRegistersPerThread;
  for (const r of sheet.roles) {
    regs += r.registers * 32 * r.warps.length;
    threads += 32 * r.warps.length;
    if (r.registers > cap) {
      sheet.does_not_fit.push(`registers: role ${r.name} needs ${r.registers} per thread, ${gpu.name} allows ${cap}`);
    }
  }
  sheet.registers.used = regs;
  if (sheet.smem.used_bytes > sheet.smem.capacity_bytes) {
    sheet.does_not_fit.push(`smem: needs ${sheet.smem.used_bytes} bytes per CTA, ${gpu.name} has ${sheet.smem.capacity_bytes}`);
  }
  if (regs > gpu.registersPerSm) sheet.does_not_fit.push(`registers: needs ${regs} per CTA, ${gpu.name} has ${gpu.registersPerSm} per SM`);
  if (sheet.tmem) {
    let used = 0;
    for (const b of sheet.tmem.buffers) used = Math.max(used, b.column + b.columns);
    sheet.tmem.used_columns = used;
    if (used > sheet.tmem.columns) sheet.does_not_fit.push(`tmem: needs ${used} columns, ${gpu.name} has ${sheet.tmem.columns}`);
  }
  const bySmem = sheet.smem.used_bytes > 0 ? Math.floor(gpu.smemPerSmBytes / sheet.smem.used_bytes) : 64;
  const byRegs = regs > 0 ? Math.floor(gpu.registersPerSm / regs) : 64;
  const byThreads = threads > 0 ? Math.floor(gpu.maxThreadsPerSm / threads) : 64;
  const byTmem = sheet.tmem && sheet.tmem.used_columns > 0 ? Math.floor(sheet.tmem.columns / sheet.tmem.used_columns) : 64;
  sheet.ctas_per_sm = sheet.does_not_fit.length > 0 ? 0 : Math.max(0, Math.min(bySmem, byRegs, byThreads, byTmem, 32));
  return sheet;
}

/** Q, K, V read once and O written once: the traffic no schedule can avoid. */
export function ioBytes(s: ProblemShape): number {
  const e = elemBytes(s.dtype);
  const oE = isFp8(s.dtype) ? 2 : e; // FP8 kernels write O in bf16
  const { q, k } = totalRows(s);
  return s.hq * q * (s.d * e + s.dv * oE) + s.hk * k * (s.d + s.dv) * e;
}

/** Query and key rows of the whole batch: each varlen sequence counts its own length, not the max. */
export function totalRows(s: ProblemShape): { q: number; k: number } {
  const seqs = sequencesOf(s);
  return { q: seqs.reduce((n, x) => n + x.nq, 0), k: seqs.reduce((n, x) => n + x.nk, 0) };
}

/** Query rows of sequence `b` as the kernel tiles it (varlen: its own length) and the rows of the sequences before it. */
export function sequenceRows(s: ProblemShape, b: number): { rows: number; before: number } {
  const seqs = sequencesOf(s);
  if (seqs.length === 1) return { rows: s.nq, before: b * s.nq };
  let before = 0;
  for (let i = 0; i < b; i++) before += seqs[i].nq;
  return { rows: seqs[b]?.nq ?? 0, before };
}

/** Bytes of one row of a split's partial: dv fp32 values of O and the row's fp32 LSE. */
export function partialRowBytes(dv: number): number {
  return (dv + 1) * 4;
}

/** Bytes per element of the O a kernel writes: FP8 kernels write O in bf16. */
export function outElemBytes(dtype: DType): number {
  return isFp8(dtype) ? 2 : elemBytes(dtype);
}

/** Launch gap before the combine kernel starts, µs (model assumption: back-to-back launches on one stream). */
export const COMBINE_LAUNCH_US = 2;

/** The combine kernel after a split-KV forward: every split's fp32 partial O and LSE read once, O written once (µs). */
export function splitCombineUs(gpu: GpuSpec, shape: ProblemShape, splits: number): number {
  if (splits <= 1) return 0;
  const rows = shape.batch * shape.hq * shape.nq;
  const bytes = rows * splits * partialRowBytes(shape.dv) + rows * shape.dv * outElemBytes(shape.dtype);
  return COMBINE_LAUNCH_US + (bytes / gpu.hbmBytesPerSec) * 1e6;
}

/** Bytes of split-KV partials (fp32 O and LSE), written by the splits and read by the combine. */
export function partialBytes(shape: ProblemShape, splits: number): number {
  return splits > 1 ? 2 * splits * shape.hq * totalRows(shape).q * partialRowBytes(shape.dv) : 0;
}

/** The HBM write of O rows [row0, row0 + rows) of one (batch, head), as a memory event spec. */
export function hbmOut(shape: ProblemShape, work: CtaWork, row0: number, rows: number, tile: string, partial = false, splits = 1): MemSpec {
  // FP8 kernels write O in bf16.
  const e = partial ? 4 : outElemBytes(shape.dtype);
  const rowBytes = partial ? partialRowBytes(shape.dv) : shape.dv * e;
  // Each (sequence, head) holds its own rows; a varlen sequence starts after the rows of those before it.
  const seq = sequenceRows(shape, work.b);
  const base = partial
    ? seq.before * shape.hq * splits + (work.h * splits + work.split) * seq.rows
    : seq.before * shape.hq + work.h * seq.rows;
  return {
    space: 'hbm',
    buffer: partial ? 'Opartial' : 'O',
    stage: work.split,
    offset: (base + row0) * rowBytes,
    bytes: Math.max(0, Math.min(rows, seq.rows - row0)) * rowBytes,
    action: 'fill',
    tile,
  };
}

/**
 * FlashAttention kernels take 16-bit inputs: their MMAs have no fp32 path. FP8 only where the
 * kernel has an FP8 path (`fp8: true`, the forwards of FA3 and FA4) and the chip has FP8 MMAs.
 */
export function requireHalf(sheet: ResourceSheet, shape: ProblemShape, name: string, gpu?: GpuSpec, fp8 = false): void {
  if (shape.dtype === 'fp32') sheet.does_not_fit.push(`dtype: ${name} takes fp16 or bf16 inputs (its MMAs have no fp32 path)`);
  if (isFp8(shape.dtype)) {
    if (!fp8)
      sheet.does_not_fit.push(`dtype: ${name} has no FP8 path (FP8 is modelled for the forwards of FA3 and FA4); pick fp16 or bf16`);
    else if (gpu && gpu.tensorFlopsPerClk.fp8 === undefined)
      sheet.does_not_fit.push(`dtype: ${gpu.name} has no FP8 tensor cores (FP8 MMAs start with SM89)`);
  }
}

/** Register count rounded the way the hardware allocates (multiples of 8 per thread). */
export function regAlloc(n: number): number {
  return Math.ceil(n / 8) * 8;
}
