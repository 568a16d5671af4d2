// The WebGPU host: buffers, pipelines and dispatches for one attention problem on one path.
// Works in the browser (worker) and under Node: it only touches the GPUDevice it is given.
//
//   const run = await AttentionRun.create(ctx, problem, { path: 'flash-f32' });
//   run.upload(inputs)  or  run.fillRandom(seed)
//   const times = await run.execute();     // per-kernel times
//   const { o, lse } = await run.read();
//   run.destroy();
//
// Tensors larger than one storage binding run in windows of whole batches or of key-head
// groups, one dispatch per window over slices of the same buffers (binding-windows.ts).

import { fa3DefaultTile } from '../algorithms/fa3/forward.ts';
import { roundArray } from '../core/dtype.ts';
import { FA3_FP8_FEATURES, prepareFp8 } from '../algorithms/fa3/fp8.ts';
import type { AttentionInputs } from '../core/inputs.ts';
import { inputSizes, kvHead } from '../core/inputs.ts';
import { isFp8, validateProblem, type AttentionProblem } from '../core/problem.ts';
import type { WebGpuContext, WebGpuPath } from './device.ts';
import { PATH_LABELS } from './device.ts';
import { flashKernelWgsl, flashLayout, type FlashKernelConfig, type FlashTile } from './flash-kernel.ts';
import { chooseMatrixTile, matrixKernelWgsl, matrixLayout, type MatrixKernelConfig, type MatrixTilePrefs } from './flash-matrix-kernel.ts';
import { decodeCombineKernelWgsl, decodeSplitKernelWgsl, DECODE_SPLIT_MAX, DECODE_THREADS } from './decode-kernels.ts';
import {
  chooseDecodeGroup,
  decodeGroupBytes,
  decodeGroupKernelWgsl,
  groupTileKeys,
  decodeSplits,
  decodeWorkgroups,
  denseGroupHeads,
  type DecodeGroupConfig,
  type DecodeGroupPrefs,
} from './decode-group-kernel.ts';
import {
  chooseDecodeMatrix,
  decodeMatrixKernelWgsl,
  decodeMatrixLayout,
  DECODE_MATRIX_WORKGROUPS,
  preferDecodeMatrix,
} from './decode-matrix-kernel.ts';
import { fillKernelWgsl } from './fill-kernel.ts';
import { formatBytes, lseBinding, planWindows, windowRange, type BindingWindow, type TensorName } from './binding-windows.ts';
import { halfToFloat, toHalfArray } from './half.ts';
import { packAux, packParams, scoreSpec } from './params.ts';
import { MASK_AUX_BINDING } from './mask-wgsl.ts';
import { BLOCK_LIST_BINDING, blockListWgsl, blockListWords, groupBlockListWgsl, groupBlockListWords } from './block-list.ts';
import { blockMask, type BlockMask } from '../core/block-mask.ts';
import {
  maxListedTiles,
  planGroupSparseDecode,
  planSparseDecode,
  SPARSE_DECODE_BN,
  SPARSE_DECODE_THREADS,
  sparseDecodeKernelWgsl,
} from './decode-sparse-kernel.ts';
import { chooseRowConfig, rowKernelWgsl, rowLayout, type RowKernelConfig } from './flash-row-kernel.ts';
import { pvKernelWgsl, scoresKernelWgsl, softmaxKernelWgsl } from './standard-kernels.ts';
import { chooseFlashTile } from './tiles.ts';
import { chooseHeadGroup } from './grid-order.ts';
import { GpuRun, WebGpuRunError } from './gpu-run.ts';

export interface RunOptions {
  path: WebGpuPath;
  /** Preferred flash tile (falls back to the largest that fits when it does not). */
  tile?: Partial<FlashTile>;
  /** Preferred subgroup-matrix tile (the benchmark's grid); falls back to what fits. */
  matrix?: MatrixTilePrefs;
  /**
   * f32/f16/subgroup paths: 'row' = the row-per-thread kernel where it applies (the default),
   * 'tiled' = the 4×4-tiled kernel (benchmark comparisons); `rowPrefs` tunes the former.
   */
  flashKernel?: 'row' | 'tiled';
  rowPrefs?: Partial<Pick<RowKernelConfig, 'tpr' | 'rpt' | 'threads' | 'bc' | 'sc'>>;
  /**
   * The most bytes one binding may hold, when below the adapter's limit: tensors larger than
   * a binding run in windows of batches or heads (binding-windows.ts); tests lower it to force windows.
   */
  maxBindingBytes?: number;
  /**
   * Flash paths: walk only the K/V tiles the block mask lists per Q tile (block-list.ts), with
   * mask tests on partial tiles only; absent: every tile the built-in masks leave, the
   * mask_mod tested on each.
   */
  blockSparse?: boolean;
  /** Decoding: the group kernel where it applies (the default), or always the scores-in-workgroup-memory split kernel. */
  decodeKernel?: 'group' | 'split';
  /** Decoding, group kernel: the benchmark's study of lanes per key, keys per step, threads and workgroups per dispatch. */
  decodePrefs?: DecodeGroupPrefs & { workgroups?: number; matrix?: boolean };
  /** Flash paths: heads per launch-order group (grid-order.ts); the benchmark's study sets it, else chooseHeadGroup. */
  headGroup?: number;
  /**
   * FP8 problems (dtype fp8e4m3/fp8e5m2, flash-f32 only): FA3's FP8 numerics emulated in f32 —
   * inputs quantized on the host as fa3 does, P cast to e4m3 in the kernel, O rounded to bf16.
   * Absent: fa3's defaults (block quantization, incoherent processing, pScale 256, seed 0).
   */
  fp8?: Partial<Fp8Switches>;
}

/** FA3's FP8 switches that apply on the GPU (the K/V order is the kernel's own: first to last). */
export interface Fp8Switches {
  blockQuant: boolean;
  incoherent: boolean;
  pScale: number;
  seed: number;
}

const GiB = 1024 ** 3;

/**
 * Which storage type a path reads its inputs in. Decoding reads f16 as packed u32 words
 * (decode-group-kernel.ts), so it needs no shader-f16: a K/V cache in f16 on every adapter.
 */
export function pathElem(path: WebGpuPath): 'f32' | 'f16' {
  return path === 'flash-f16' || path === 'flash-matrix' || path === 'decode' ? 'f16' : 'f32';
}

/** The kernel family each path runs; build() lays out that family's pipelines and dispatches. */
const KERNEL_FAMILIES: Record<WebGpuPath, 'flash' | 'matrix' | 'standard' | 'decode'> = {
  'flash-f32': 'flash',
  'flash-f16': 'flash',
  'flash-subgroups': 'flash',
  'flash-matrix': 'matrix',
  standard: 'standard',
  decode: 'decode',
};

const rowsText = (n: number) => `${n} query row${n > 1 ? 's' : ''}`;
/** How a decode group kernel walks its keys, as the dense and the block-sparse decode describe it. */
const groupLanesText = (g: DecodeGroupConfig) =>
  `${g.lpk} lanes per key, ${g.ku} key${g.ku > 1 ? 's' : ''} per step${g.prefetch ? ' loaded a step ahead' : ''}, ${g.threads} threads`;

const pipelineCache = new WeakMap<GPUDevice, Map<string, GPUComputePipeline>>();

export async function pipeline(device: GPUDevice, code: string): Promise<GPUComputePipeline> {
  let cache = pipelineCache.get(device);
  if (!cache) pipelineCache.set(device, (cache = new Map()));
  const hit = cache.get(code);
  if (hit) return hit;
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error');
  if (errors.length) {
    throw new WebGpuRunError(`WGSL compile error: ${errors.map((e) => `${e.lineNum}:${e.linePos} ${e.message}`).join('; ')}`);
  }
  device.pushErrorScope('validation');
  const p = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const err = await device.popErrorScope();
  if (err) throw new WebGpuRunError(`pipeline creation failed: ${err.message}`);
  cache.set(code, p);
  return p;
}

export class AttentionRun extends GpuRun {
  private q!: GPUBuffer;
  private k!: GPUBuffer;
  private v!: GPUBuffer;
  private o!: GPUBuffer;
  private lse!: GPUBuffer;
  /** The windows the problem runs in, one dispatch each (a single window binds every tensor whole). */
  private windows: BindingWindow[] = [];
  /** The most bytes one binding holds: the adapter's limit, or RunOptions.maxBindingBytes below it. */
  private bindingLimit = 0;
  /** Block-sparse runs: the K/V tiles each Q tile visits (block-list.ts). */
  private blocks: GPUBuffer | undefined;
  private sparseNote = '';
  /** Block-sparse runs: the fraction of (Q tile, K/V tile) pairs visited. */
  blockDensity: number | undefined;
  /** The aux arrays a mask_mod / score_mod reads (binding MASK_AUX_BINDING), where it reads any. */
  private maskAux: GPUBuffer | undefined;
  /** Set for FP8 problems: how inputs are quantized and P is cast. */
  private fp8: Fp8Switches | undefined;
  /** Block-sparse runs: the most K/V tiles any Q tile lists. */
  private listedMost = 0;
  /** Decoding: which split kernel runs (the matrix kernel stores P in f16; the others keep it f32). */
  decodeKernel: 'matrix' | 'group' | 'split' | 'sparse' | undefined;

  private constructor(
    ctx: WebGpuContext,
    readonly problem: AttentionProblem,
    readonly path: WebGpuPath,
  ) {
    super(ctx);
  }

  static async create(ctx: WebGpuContext, problem: AttentionProblem, opts: RunOptions): Promise<AttentionRun> {
    validateProblem(problem);
    if (opts.blockSparse && opts.path === 'standard') {
      throw new WebGpuRunError(`block-sparse runs take a flash or decoding path, not '${PATH_LABELS[opts.path]}'`);
    }
    if (problem.mask !== undefined && opts.path === 'standard') {
      throw new WebGpuRunError(
        `mask_mod / score_mod text runs on the flash and decoding paths; '${PATH_LABELS[opts.path]}' takes the built-in causal, window, ALiBi, softcap and sinks`,
      );
    }
    // WGSL has no 8-bit float type: FP8 is emulated on the f32 flash path only.
    if (isFp8(problem.dtype) && opts.path !== 'flash-f32') {
      throw new WebGpuRunError(
        `dtype ${problem.dtype}: FP8 is emulated on the flash-f32 path only (WGSL has no 8-bit float type), not on '${PATH_LABELS[opts.path]}'`,
      );
    }
    if (ctx.lost) throw new WebGpuRunError(ctx.lost);
    if (!ctx.paths.includes(opts.path)) {
      throw new WebGpuRunError(`this adapter does not offer the '${PATH_LABELS[opts.path]}' path`);
    }
    const run = new AttentionRun(ctx, problem, opts.path);
    // The same defaults as the CPU stepper's FP8 switches (the shipped kernel's per-tensor descales).
    const f = FA3_FP8_FEATURES;
    if (isFp8(problem.dtype)) {
      run.fp8 = {
        blockQuant: f.blockQuant.default,
        incoherent: f.incoherent.default,
        pScale: f.pScale.default,
        seed: f.seed.default,
        ...opts.fp8,
      };
    }
    try {
      await run.build(opts);
    } catch (e) {
      run.destroy();
      throw e;
    }
    return run;
  }

  /** `windowed`: bound in windows, so only the buffer size limit applies. */
  private async buffer(label: string, size: number, usage: number, windowed = false): Promise<GPUBuffer> {
    const bytes = Math.max(16, Math.ceil(size / 4) * 4);
    const limit = windowed ? this.ctx.limits.maxBuffer : this.ctx.limits.maxStorageBinding;
    if (bytes > limit) {
      throw new WebGpuRunError(
        `${label} needs ${formatBytes(bytes)} in one ${windowed ? 'buffer' : 'binding'}; this adapter allows at most ${formatBytes(limit)}. Use a smaller problem.`,
      );
    }
    const { device } = this.ctx;
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    const b = device.createBuffer({ label, size: bytes, usage });
    const invalid = await device.popErrorScope();
    const oom = await device.popErrorScope();
    if (oom || invalid) {
      b.destroy();
      throw new WebGpuRunError(
        oom
          ? `out of GPU memory allocating ${label} (${formatBytes(bytes)}). Use a smaller problem.`
          : `could not create ${label} (${formatBytes(bytes)}): ${invalid?.message}`,
      );
    }
    this.buffers.push(b);
    return b;
  }

  private uniform(data: ArrayBuffer): GPUBuffer {
    const b = this.ctx.device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.ctx.device.queue.writeBuffer(b, 0, data);
    this.buffers.push(b);
    return b;
  }

  private bind(p: GPUComputePipeline, entries: Record<number, GPUBuffer | GPUBufferBinding>): GPUBindGroup {
    return this.ctx.device.createBindGroup({
      layout: p.getBindGroupLayout(0),
      entries: Object.entries(entries).map(([binding, b]) => ({ binding: Number(binding), resource: 'buffer' in b ? b : { buffer: b } })),
    });
  }

  /**
   * One flash forward dispatch per window: bindings 1–5 are the window's slices of Q, K, V,
   * O and LSE, and the grid's y covers the window's (batch, head) rows.
   */
  private pushFlash(name: string, pipe: GPUComputePipeline, aux: GPUBuffer, bm: number, headGroupOverride?: number): void {
    const p = this.problem;
    const blocks = Math.ceil(p.nq / bm);
    // Masks that give query blocks different key counts make the launch order matter.
    const uneven = p.causal || p.window !== undefined;
    for (const w of this.windows) {
      const t = this.slices(w);
      const headGroup = chooseHeadGroup(uneven, blocks, w.nb * w.nh, headGroupOverride);
      this.dispatches.push({
        name,
        pipeline: pipe,
        bindGroup: this.bind(pipe, {
          0: this.uniform(packParams(this.problem, { lse0: t.lse0, head0: t.head0, headGroup })),
          1: t.Q,
          2: t.K,
          3: t.V,
          4: t.O,
          5: t.LSE,
          6: aux,
          ...this.maskBindings(),
        }),
        workgroups: [blocks, w.nb * w.nh, 1],
      });
      if (w === this.windows[0] && headGroup > 1) this.config += `; tiles longest-first in groups of ${headGroup} heads`;
    }
    this.noteWindows();
  }

  /** The mask's extra bindings: its aux words where its functions read them, the block list. */
  private maskBindings(): Record<number, GPUBuffer> {
    const out: Record<number, GPUBuffer> = {};
    if (this.maskAux) out[MASK_AUX_BINDING] = this.maskAux;
    if (this.blocks) out[BLOCK_LIST_BINDING] = this.blocks;
    return out;
  }

  /**
   * Block-sparse runs: the block mask at the kernel's bm × bn tiles uploaded as the block list
   * (with `groupHeads`, the group list of decoding's group layout), and the WGSL that reads it;
   * undefined for dense runs.
   */
  private async blockList(opts: RunOptions, bm: number, bn: number, groupHeads?: number): Promise<string | undefined> {
    if (!opts.blockSparse) return undefined;
    const p = this.problem;
    let mask: BlockMask;
    try {
      mask = blockMask(p, bm, bn);
    } catch (e) {
      throw new WebGpuRunError(`block-sparse: ${e instanceof Error ? e.message : String(e)}`);
    }
    const words = groupHeads ? groupBlockListWords(mask, p.nk, groupHeads) : blockListWords(mask, p.nk);
    this.listedMost = maxListedTiles(words, mask.kvBlocks, groupHeads ? 1 : 2);
    this.blocks = await this.buffer('block list', words.byteLength, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
    this.ctx.device.queue.writeBuffer(this.blocks, 0, words);
    const listed = mask.counts.partial + mask.counts.full;
    this.blockDensity = mask.density;
    this.sparseNote = `; block-sparse over ${bm}×${bn} tiles: ${Math.round(listed)} of ${Math.round(listed + mask.counts.empty)} tile pairs visited (density ${mask.density.toFixed(3)}, ${Math.round(mask.counts.full)} without mask tests)`;
    return groupHeads ? groupBlockListWgsl(mask) : blockListWgsl(mask);
  }

  /**
   * Window w's part of each tensor (the whole buffer when there is one window), where its
   * LSE starts in its binding, and its first (batch, query head) row (binding-windows.ts).
   */
  private slices(w: BindingWindow): Record<TensorName, GPUBuffer | GPUBufferBinding> & { lse0: number; head0: number } {
    const eb = pathElem(this.path) === 'f16' ? 2 : 4;
    const buffers: Record<TensorName, GPUBuffer> = { Q: this.q, K: this.k, V: this.v, O: this.o, LSE: this.lse };
    const out = { lse0: 0, head0: w.b0 * this.problem.hq + w.h0 } as Record<TensorName, GPUBuffer | GPUBufferBinding> & {
      lse0: number;
      head0: number;
    };
    for (const t of Object.keys(buffers) as TensorName[]) {
      const buffer = buffers[t];
      if (this.windows.length === 1) {
        out[t] = buffer;
        continue;
      }
      const lse = t === 'LSE' ? lseBinding(this.problem, w, this.ctx.limits.minStorageOffset) : undefined;
      const range = windowRange(this.problem, eb, w, t);
      const offset = lse ? lse.offset : range.start;
      const bytes = lse ? lse.size : range.bytes;
      if (lse) out.lse0 = lse.lse0;
      // Storage bindings are whole words; the last window may end mid-word in f16.
      out[t] = { buffer, offset, size: Math.min(Math.ceil(bytes / 4) * 4, buffer.size - offset) };
    }
    return out;
  }

  private noteWindows(): void {
    if (this.windows.length < 2) return;
    const { nb, nh } = this.windows[0];
    const size = nh < this.problem.hq ? `${nh} head${nh > 1 ? 's' : ''} (inside one batch)` : `${nb} batch${nb > 1 ? 'es' : ''}`;
    this.config += `; in ${this.windows.length} windows of ${size} (one binding holds at most ${formatBytes(this.bindingLimit)})`;
  }

  private async build(opts: RunOptions): Promise<void> {
    const p = this.problem;
    const { device } = this.ctx;
    const family = KERNEL_FAMILIES[this.path];
    const s = inputSizes(p);
    const eb = pathElem(this.path) === 'f16' ? 2 : 4;
    const RW = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    this.bindingLimit = Math.min(this.ctx.limits.maxStorageBinding, opts.maxBindingBytes ?? Infinity);
    const plan = planWindows(p, eb, this.bindingLimit, this.ctx.limits.minStorageOffset);
    if ('error' in plan) throw new WebGpuRunError(plan.error);
    const perHead = p.nq * p.nk * 4;
    if (family === 'standard' && perHead > this.ctx.limits.maxStorageBinding) {
      throw new WebGpuRunError(
        `standard attention needs the ${p.nq}×${p.nk} score matrix of one head in memory (${formatBytes(perHead)}); this adapter binds at most ${formatBytes(this.ctx.limits.maxStorageBinding)}. The flash paths need no such buffer.`,
      );
    }
    if (plan.length > 1 && family === 'standard') {
      throw new WebGpuRunError(
        `${PATH_LABELS[this.path]} binds every tensor whole, and one of this problem's needs more than the ${formatBytes(this.bindingLimit)} a binding holds; the flash paths and flash-decoding run it in windows.`,
      );
    }
    this.windows = plan;
    this.q = await this.buffer('Q', s.q * eb, RW, true);
    this.k = await this.buffer('K', s.k * eb, RW, true);
    this.v = await this.buffer('V', s.v * eb, RW, true);
    this.o = await this.buffer('O', s.o * 4, RW, true);
    this.lse = await this.buffer('LSE', s.lse * 4, RW, true);
    const aux = await this.buffer('ALiBi slopes and sinks', 8 * p.hq, RW);
    device.queue.writeBuffer(aux, 0, packAux(p));
    const user = scoreSpec(p).user;
    if (user?.readsAux) {
      this.maskAux = await this.buffer('mask aux arrays', user.auxWords.byteLength, RW);
      device.queue.writeBuffer(this.maskAux, 0, user.auxWords);
    }
    const bh = p.batch * p.hq;
    if (bh > this.ctx.limits.maxWorkgroupsPerDim) throw new WebGpuRunError(`batch × heads (${bh}) exceeds the adapter's dispatch limit`);
    if (family === 'flash') await this.buildFlash(opts, aux);
    else if (family === 'matrix') await this.buildMatrix(opts, aux);
    else if (family === 'standard') await this.buildStandard(aux, perHead);
    else if (opts.blockSparse || p.mask !== undefined) await this.buildSparseDecode(opts, aux);
    else await this.buildDecode(opts, aux);
  }

  /** The flash forward on f32 or f16 storage (subgroup row reductions on 'flash-subgroups'): the row kernel, else the tiled one. */
  private async buildFlash(opts: RunOptions, aux: GPUBuffer): Promise<void> {
    const p = this.problem;
    const { device } = this.ctx;
    const elem = pathElem(this.path);
    const subgroupMin = this.path === 'flash-subgroups' ? this.ctx.subgroupMinSize : 0;
    const pCast = this.fp8?.pScale;
    const chosen =
      opts.flashKernel === 'tiled'
        ? undefined
        : chooseRowConfig(this.ctx.limits, { elem, d: p.d, dv: p.dv, score: scoreSpec(p), subgroupMin }, opts.rowPrefs);
    const row = chosen && { ...chosen, pCast };
    let code: string;
    let bm: number;
    if (row) {
      const L = rowLayout(row);
      bm = L.bm;
      code = rowKernelWgsl({ ...row, blockList: await this.blockList(opts, L.bm, row.bc) });
      this.config = `row kernel: ${row.rpt} row${row.rpt > 1 ? 's' : ''} per ${row.tpr} lane${row.tpr > 1 ? 's (subgroup shuffles)' : ''}, BM=${L.bm} rows, ${row.threads} threads, K/V chunks of ${row.bc} keys (sub-chunks of ${row.sc}), ${L.bytes} B workgroup memory`;
    } else {
      const cfg: FlashKernelConfig = {
        ...chooseFlashTile(this.ctx, { elem, subgroup: subgroupMin, d: p.d, dv: p.dv }, opts.tile),
        pCast,
        user: scoreSpec(p).user,
      };
      const L = flashLayout(cfg);
      bm = cfg.bm;
      code = flashKernelWgsl({ ...cfg, blockList: await this.blockList(opts, cfg.bm, cfg.bn) });
      this.config = `BM=${cfg.bm} BN=${cfg.bn} DK=${cfg.dk} JC=${cfg.jc}, ${L.threads} threads, ${L.bytes} B workgroup memory${
        cfg.subgroup ? `, shuffles over ${L.lanes} lanes` : ''
      }`;
    }
    const pipe = await pipeline(device, code);
    this.pushFlash('flash forward', pipe, aux, bm, opts.headGroup);
    this.config += this.sparseNote;
  }

  /** The flash forward on f16 subgroup matrices (tensor cores). */
  private async buildMatrix(opts: RunOptions, aux: GPUBuffer): Promise<void> {
    const p = this.problem;
    const { device } = this.ctx;
    const listed = async (c: MatrixKernelConfig): Promise<MatrixKernelConfig> => ({
      ...c,
      blockList: await this.blockList(opts, matrixLayout(c).bm, c.bn),
    });
    let cfg: MatrixKernelConfig = await listed(chooseMatrixTile(this.ctx, p, scoreSpec(p), true, opts.matrix));
    let pipe: GPUComputePipeline;
    let note = '';
    try {
      pipe = await pipeline(device, matrixKernelWgsl(cfg));
    } catch (e) {
      if (!cfg.subgroupId) throw e;
      // The compiler rejected subgroup_id: one subgroup per workgroup needs no subgroup ids.
      cfg = await listed(chooseMatrixTile(this.ctx, p, scoreSpec(p), false, opts.matrix));
      pipe = await pipeline(device, matrixKernelWgsl(cfg));
      note = ' (subgroup_id rejected by the compiler, so one subgroup per workgroup)';
    }
    const L = matrixLayout(cfg);
    this.config = `${cfg.m}×${cfg.n}×${cfg.k} f16 subgroup matrices, Q and O in registers (Q ${cfg.qFromBuffer ? 'loaded from its buffer' : 'staged'}), BM=${L.bm} BN=${cfg.bn}, ${cfg.warps} subgroups of ${cfg.sg}, K/V staged with a register prefetch and written during the softmax (2 barriers per tile), O never rescaled (a second pass where a row max grows past e^${cfg.rescaleLog} after its first P), ${L.bytes} B workgroup memory${note}`;
    this.pushFlash('flash forward (subgroup matrix)', pipe, aux, L.bm, opts.headGroup);
    this.config += this.sparseNote;
  }

  /** Standard attention: S and P materialized for a group of heads at a time, three passes per group. */
  private async buildStandard(aux: GPUBuffer, perHead: number): Promise<void> {
    const p = this.problem;
    const { device } = this.ctx;
    const bh = p.batch * p.hq;
    const limit = this.ctx.limits.maxStorageBinding;
    // As many heads per pass as fit in a quarter of the binding limit (S is reused across groups).
    const group = Math.max(1, Math.min(bh, Math.floor(Math.min(limit, 2 * GiB) / perHead)));
    const sbuf = await this.buffer(`S/P for ${group} heads`, group * perHead, GPUBufferUsage.STORAGE);
    this.config = `S/P materialized for ${group} of ${bh} heads at a time (${formatBytes(group * perHead)}); 64×64 tiles, 256 threads`;
    const [ps, pm, pp] = await Promise.all([
      pipeline(device, scoresKernelWgsl(p.d, p.dv)),
      pipeline(device, softmaxKernelWgsl(p.d, p.dv)),
      pipeline(device, pvKernelWgsl(p.d, p.dv)),
    ]);
    for (let h0 = 0; h0 < bh; h0 += group) {
      const g = Math.min(group, bh - h0);
      const params = this.uniform(packParams(p, { head0: h0 }));
      this.dispatches.push(
        {
          name: 'S = QKᵀ',
          pipeline: ps,
          bindGroup: this.bind(ps, { 0: params, 1: this.q, 2: this.k, 3: sbuf, 6: aux }),
          workgroups: [Math.ceil(p.nk / 64), Math.ceil(p.nq / 64), g],
        },
        {
          name: 'P = softmax(S)',
          pipeline: pm,
          bindGroup: this.bind(pm, { 0: params, 3: sbuf, 5: this.lse, 6: aux }),
          workgroups: [p.nq, g, 1],
        },
        {
          name: 'O = PV',
          pipeline: pp,
          bindGroup: this.bind(pp, { 0: params, 2: this.v, 3: sbuf, 4: this.o }),
          workgroups: [Math.ceil(p.dv / 64), Math.ceil(p.nq / 64), g],
        },
      );
    }
  }

  /** Flash-decoding: split K/V passes, then the LSE combine, per binding window. */
  private async buildDecode(opts: RunOptions, aux: GPUBuffer): Promise<void> {
    const p = this.problem;
    const { device } = this.ctx;
    // decode (f16 Q/K/V): about 2048 workgroups (the whole GPU busy on a bandwidth-bound pass), splits of
    // at least 128 keys (each split pays for a query load and two reductions) and at most
    // DECODE_SPLIT_MAX (its scores live in workgroup memory).
    // In windows the partials are sized for one window and reused: each window's
    // combine pass runs before the next window's split pass overwrites them.
    const wbh = this.windows[0].nb * this.windows[0].nh;
    const subgroupMin = this.ctx.paths.includes('flash-subgroups') ? this.ctx.subgroupMinSize : 0;
    // Tensor cores for a key head's whole group where the adapter has f16 subgroup matrices.
    const mat =
      opts.decodeKernel !== 'split' &&
      (opts.decodePrefs?.matrix ?? preferDecodeMatrix((p.hq / p.hk) * p.nq)) &&
      this.ctx.paths.includes('flash-matrix')
        ? chooseDecodeMatrix(p, scoreSpec(p), this.ctx.matrixConfigs, this.ctx.subgroupMinSize, this.ctx.subgroupMaxSize)
        : undefined;
    const group =
      mat || opts.decodeKernel === 'split'
        ? undefined
        : chooseDecodeGroup(p, scoreSpec(p), subgroupMin, this.ctx.limits.maxWorkgroupStorage, {
            groupHeads: denseGroupHeads(p),
            ...opts.decodePrefs,
          });
    // The matrix and group kernels: one workgroup per (split, key head); no scores in workgroup
    // memory, so splits may be long (decodeSplits).
    // Query rows per workgroup: a key head's group, or part of it (DecodeGroupPrefs.groupHeads).
    const rows = (mat ?? group)?.rows;
    const groupHeads = rows ? rows / p.nq : 1;
    const heads = wbh / groupHeads;
    const splits = rows
      ? decodeSplits(p.nk, heads, opts.decodePrefs?.workgroups ?? (mat ? DECODE_MATRIX_WORKGROUPS : decodeWorkgroups(rows)))
      : Math.max(1, Math.ceil(p.nk / DECODE_SPLIT_MAX), Math.min(Math.ceil(2048 / wbh), Math.ceil(p.nk / 128)));
    const splitLen = Math.ceil(p.nk / splits / 4) * 4;
    const used = Math.ceil(p.nk / splitLen);
    const opart = await this.buffer('partial O', wbh * used * p.nq * p.dv * 4, GPUBufferUsage.STORAGE);
    const lpart = await this.buffer('partial LSE', wbh * used * p.nq * 4, GPUBufferUsage.STORAGE);
    this.decodeKernel = mat ? 'matrix' : group ? 'group' : 'split';
    const splitText = `${used} split${used > 1 ? 's' : ''} of ${splitLen} keys`;
    this.config = `f16 Q, K, V (unpacked from u32 words), f32 arithmetic; ${
      mat
        ? `${splitText} per key head, each read once for its ${rowsText(mat.rows)} as one ${mat.m}-row tile on ${mat.m}×${mat.n}×${mat.n} subgroup matrices, K/V staged through workgroup memory, ${mat.sg} threads, ${decodeMatrixLayout(mat).bytes} B workgroup memory`
        : group
          ? `${splitText} per key head, ${groupHeads * p.hk === p.hq ? `each read once for its ${rowsText(group.rows)}` : `each read by ${p.hq / p.hk / groupHeads} workgroups of ${rowsText(group.rows)}`}; ${groupLanesText(group)}, ${decodeGroupBytes(group)} B workgroup memory`
          : `${splitText}, ${DECODE_THREADS} threads per split`
    }`;
    const [psplit, pcomb] = await Promise.all([
      pipeline(device, mat ? decodeMatrixKernelWgsl(mat) : group ? decodeGroupKernelWgsl(group) : decodeSplitKernelWgsl(p.d, p.dv)),
      pipeline(device, decodeCombineKernelWgsl(p.dv)),
    ]);
    for (const w of this.windows) {
      const t = this.slices(w);
      this.dispatches.push(
        {
          name: 'split K/V',
          pipeline: psplit,
          bindGroup: this.bind(psplit, {
            0: this.uniform(packParams(p, { splits: used, splitLen, head0: t.head0 })),
            1: t.Q,
            2: t.K,
            3: t.V,
            4: opart,
            5: lpart,
            6: aux,
          }),
          workgroups: [used, (w.nb * w.nh) / groupHeads, 1],
        },
        {
          name: 'LSE combine',
          pipeline: pcomb,
          bindGroup: this.bind(pcomb, {
            0: this.uniform(packParams(p, { splits: used, splitLen, lse0: t.lse0, head0: t.head0 })),
            1: opart,
            2: lpart,
            4: t.O,
            5: t.LSE,
            6: aux,
          }),
          workgroups: [p.nq, w.nb * w.nh, 1],
        },
      );
    }
    this.noteWindows();
  }

  /**
   * Decoding with a mask_mod / score_mod or block-sparse: splits of listed K/V tiles
   * (decode-sparse-kernel.ts), then the LSE combine; in windows as the dense decode runs.
   */
  private async buildSparseDecode(opts: RunOptions, aux: GPUBuffer): Promise<void> {
    const p = this.problem;
    const spec = scoreSpec(p);
    const subgroupMin = this.ctx.paths.includes('flash-subgroups') ? this.ctx.subgroupMinSize : 0;
    const group =
      opts.decodeKernel === 'split'
        ? undefined
        : chooseDecodeGroup(p, spec, subgroupMin, this.ctx.limits.maxWorkgroupStorage, {
            groupHeads: denseGroupHeads(p),
            ...opts.decodePrefs,
          });
    const bn = group ? groupTileKeys(group) : SPARSE_DECODE_BN;
    const groupHeads = group ? group.rows / p.nq : 1;
    const list = await this.blockList({ ...opts, blockSparse: true }, p.nq, bn, group ? groupHeads : undefined);
    const wbh = this.windows[0].nb * this.windows[0].nh;
    const plan = group
      ? planGroupSparseDecode(this.listedMost, wbh / groupHeads, bn, opts.decodePrefs?.workgroups ?? decodeWorkgroups(group.rows))
      : planSparseDecode(this.listedMost, wbh);
    const opart = await this.buffer('partial O', wbh * plan.splits * p.nq * p.dv * 4, GPUBufferUsage.STORAGE);
    const lpart = await this.buffer('partial LSE', wbh * plan.splits * p.nq * 4, GPUBufferUsage.STORAGE);
    const [psplit, pcomb] = await Promise.all([
      pipeline(
        this.ctx.device,
        group ? decodeGroupKernelWgsl({ ...group, blockList: { wgsl: list!, bn } }) : sparseDecodeKernelWgsl(p.d, p.dv, spec, list!),
      ),
      pipeline(this.ctx.device, decodeCombineKernelWgsl(p.dv)),
    ]);
    this.decodeKernel = 'sparse';
    const splitText = `${plan.splits} split${plan.splits > 1 ? 's' : ''} of up to ${plan.tilesPerSplit} listed tiles`;
    this.config = `f16 Q, K, V (unpacked from u32 words), f32 arithmetic; ${
      group
        ? `${splitText} per key head, each read once for its ${rowsText(group.rows)}; ${groupLanesText(group)}`
        : `${splitText} per query head, ${SPARSE_DECODE_THREADS} threads`
    }${this.sparseNote}`;
    const params = (t: { head0: number; lse0: number }) =>
      this.uniform(packParams(p, { splits: plan.splits, splitLen: plan.tilesPerSplit, head0: t.head0, lse0: t.lse0 }));
    for (const w of this.windows) {
      const t = this.slices(w);
      this.dispatches.push(
        {
          name: 'split listed K/V tiles',
          pipeline: psplit,
          // aux (binding 6) holds ALiBi slopes; the per-head kernel declares it only for ALiBi.
          bindGroup: this.bind(psplit, {
            0: params(t),
            1: t.Q,
            2: t.K,
            3: t.V,
            4: opart,
            5: lpart,
            ...(group || spec.alibi ? ({ 6: aux } as Record<number, GPUBuffer>) : {}),
            ...this.maskBindings(),
          }),
          workgroups: [plan.splits, (w.nb * w.nh) / groupHeads, 1],
        },
        {
          name: 'LSE combine',
          pipeline: pcomb,
          bindGroup: this.bind(pcomb, { 0: params(t), 1: opart, 2: lpart, 4: t.O, 5: t.LSE, 6: aux }),
          workgroups: [p.nq, w.nb * w.nh, 1],
        },
      );
    }
    this.noteWindows();
  }

  upload(xIn: AttentionInputs): void {
    // FP8: quantized (and rotated) on the host exactly as fa3 does, with fa3's FP8 tiles as blocks.
    const x = this.fp8 ? this.quantized(xIn, this.fp8) : xIn;
    const f16 = pathElem(this.path) === 'f16';
    const put = (b: GPUBuffer, a: Float32Array) => {
      const data = f16 ? toHalfArray(a) : a;
      this.ctx.device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    };
    put(this.q, x.q);
    put(this.k, x.k);
    put(this.v, x.v);
  }

  private quantized(x: AttentionInputs, f: Fp8Switches): AttentionInputs {
    const { blockM, blockN } = fa3DefaultTile(this.problem);
    return prepareFp8(this.problem, x, f, blockM, blockN).x;
  }

  /** FP8 kernels write O in bf16. */
  private outputs<T extends { o: Float32Array }>(r: T): T {
    if (this.fp8) roundArray('bf16', r.o);
    return r;
  }

  /** N(0,1) inputs generated on the GPU (seeded; Q, K, V get different streams). */
  async fillRandom(seed: number): Promise<void> {
    if (this.fp8)
      throw new WebGpuRunError(
        'FP8 inputs are quantized on the host: upload them (random inputs generated on the GPU would skip the quantization)',
      );
    const elem = pathElem(this.path);
    const pipe = await pipeline(this.ctx.device, fillKernelWgsl(elem));
    const s = inputSizes(this.problem);
    const enc = this.ctx.device.createCommandEncoder();
    const tmp: GPUBuffer[] = [];
    // Tensors larger than one binding are filled a binding-sized chunk at a time; the values
    // depend only on the element's index in the whole tensor, not on the chunking.
    const eb = elem === 'f16' ? 2 : 4;
    const align = this.ctx.limits.minStorageOffset;
    const chunk = Math.floor(this.bindingLimit / align) * (align / eb);
    [
      [this.q, s.q, 1],
      [this.k, s.k, 2],
      [this.v, s.v, 3],
    ].forEach(([buf, count, stream]) => {
      const total = count as number;
      for (let first = 0; first < total; first += chunk) {
        const n = Math.min(chunk, total - first);
        const groups = Math.ceil(n / 256);
        const x = Math.min(groups, this.ctx.limits.maxWorkgroupsPerDim);
        const y = Math.ceil(groups / x);
        const u = this.ctx.device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
        this.ctx.device.queue.writeBuffer(u, 0, new Uint32Array([n, (seed * 7919 + (stream as number) * 104729) >>> 0, x * 256, first]));
        tmp.push(u);
        const b = buf as GPUBuffer;
        const whole = first === 0 && n === total;
        const slice = whole ? b : { buffer: b, offset: first * eb, size: Math.min(Math.ceil((n * eb) / 4) * 4, b.size - first * eb) };
        const pass = enc.beginComputePass();
        pass.setPipeline(pipe);
        pass.setBindGroup(0, this.bind(pipe, { 0: u, 1: slice }));
        pass.dispatchWorkgroups(x, y, 1);
        pass.end();
      }
    });
    this.ctx.device.queue.submit([enc.finish()]);
    await this.ctx.device.queue.onSubmittedWorkDone();
    tmp.forEach((b) => b.destroy());
  }

  async read(): Promise<{ o: Float32Array; lse: Float32Array }> {
    const s = inputSizes(this.problem);
    const [o, lse] = await Promise.all([this.readBuffer(this.o, 0, s.o * 4), this.readBuffer(this.lse, 0, s.lse * 4)]);
    return this.outputs({ o: new Float32Array(o), lse: new Float32Array(lse) });
  }

  /** O [nq, dv] and LSE [nq] of one (batch, head): what a result view shows without reading all heads. */
  async readHead(b: number, h: number): Promise<{ o: Float32Array; lse: Float32Array }> {
    const p = this.problem;
    const r = (b * p.hq + h) * p.nq;
    const [o, lse] = await Promise.all([
      this.readBuffer(this.o, r * p.dv * 4, p.nq * p.dv * 4),
      this.readBuffer(this.lse, r * 4, p.nq * 4),
    ]);
    return this.outputs({ o: new Float32Array(o), lse: new Float32Array(lse) });
  }

  /** One row of O (dv floats) — for checks on large problems without reading everything back. */
  async readRow(b: number, h: number, i: number): Promise<{ o: Float32Array; lse: number }> {
    const p = this.problem;
    const r = (b * p.hq + h) * p.nq + i;
    const [o, lse] = await Promise.all([this.readBuffer(this.o, r * p.dv * 4, p.dv * 4), this.readBuffer(this.lse, r * 4, 4)]);
    return this.outputs({ o: new Float32Array(o), lse: new Float32Array(lse)[0] });
  }

  private async readElems(src: GPUBuffer, first: number, count: number): Promise<Float32Array> {
    if (pathElem(this.path) === 'f32') return new Float32Array(await this.readBuffer(src, first * 4, count * 4));
    // f16: offsets must be 4-byte aligned, so read from the even element before `first`.
    const start = first - (first % 2);
    const raw = new Uint16Array(await this.readBuffer(src, start * 2, (first - start + count) * 2));
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = halfToFloat(raw[first - start + i]);
    return out;
  }

  /** The inputs one query row depends on, as stored on the GPU (what the CPU check recomputes from). */
  async readRowInputs(b: number, h: number, i: number): Promise<{ q: Float32Array; k: Float32Array; v: Float32Array }> {
    const p = this.problem;
    const hk = kvHead(p, h);
    const [q, k, v] = await Promise.all([
      this.readElems(this.q, ((b * p.hq + h) * p.nq + i) * p.d, p.d),
      this.readElems(this.k, (b * p.hk + hk) * p.nk * p.d, p.nk * p.d),
      this.readElems(this.v, (b * p.hk + hk) * p.nk * p.dv, p.nk * p.dv),
    ]);
    return { q, k, v };
  }
}
