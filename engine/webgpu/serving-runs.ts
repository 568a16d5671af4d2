// The WebGPU host for the serving layouts: a packed varlen batch through the flash kernels
// (varlen-layout.ts) and flash-decoding over a paged K/V cache (paged-layout.ts). Same life
// cycle as backend.ts's AttentionRun:
//
//   const run = await VarlenGpuRun.create(ctx, vp, { path: 'flash-f32' });   // or PagedDecodeGpuRun
//   run.upload(x)  or  await run.fillRandom(seed)
//   const times = await run.execute();
//   const { o, lse } = await run.read();   // the layouts' own output shapes
//   run.destroy();
//
// Problems are checked by engine/layouts' validators (the same refusals, naming the tensor and
// index, as the CPU engine's). Every tensor is bound whole: a problem whose tensor needs more than
// one binding is refused with the size it needs (the dense paths' windows do not apply here).

import { ProblemError, validateProblem } from '../core/problem.ts';
import { checkOffsets, totalK, totalQ, varlenBatch, type VarlenInputs, type VarlenProblem } from '../layouts/varlen.ts';
import { validatePaged, type PagedInputs, type PagedProblem } from '../layouts/paged.ts';
import { sequenceProblem } from '../layouts/sequence-runner.ts';
import { pathElem, pipeline } from './backend.ts';
import { GpuRun, WebGpuRunError } from './gpu-run.ts';
import type { WebGpuContext, WebGpuPath } from './device.ts';
import { PATH_LABELS } from './device.ts';
import { chooseRowConfig, rowKernelWgsl, rowLayout, type RowKernelConfig } from './flash-row-kernel.ts';
import { flashKernelWgsl, flashLayout } from './flash-kernel.ts';
import { chooseMatrixTile, matrixKernelWgsl, matrixLayout, type MatrixTilePrefs } from './flash-matrix-kernel.ts';
import { chooseFlashTile } from './tiles.ts';
import { chooseHeadGroup } from './grid-order.ts';
import {
  chooseDecodeGroup,
  decodeGroupBytes,
  decodeGroupKernelWgsl,
  DECODE_GROUP_MAX_ROWS,
  type DecodeGroupPrefs,
} from './decode-group-kernel.ts';
import { fillKernelWgsl } from './fill-kernel.ts';
import { formatBytes } from './binding-windows.ts';
import { halfToFloat, toHalfArray } from './half.ts';
import { packAux, packParams, scoreSpec } from './params.ts';
import { packVarlenTable, varlenTiles, VARLEN_BINDING } from './varlen-layout.ts';
import { packPagedTable, pagedCombineKernelWgsl, pagedWork, PAGED_BINDING, type PagedWork } from './paged-layout.ts';

const RW = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;

/** Buffers, uniforms and bind groups shared by both runs. */
abstract class ServingRun extends GpuRun {
  protected async buffer(label: string, bytes: number, usage: number): Promise<GPUBuffer> {
    const size = Math.max(16, Math.ceil(bytes / 4) * 4);
    if (size > this.ctx.limits.maxStorageBinding) {
      throw new WebGpuRunError(
        `${label} needs ${formatBytes(size)} in one binding; this adapter allows at most ${formatBytes(this.ctx.limits.maxStorageBinding)}. Use a smaller batch.`,
      );
    }
    const { device } = this.ctx;
    device.pushErrorScope('out-of-memory');
    const b = device.createBuffer({ label, size, usage });
    if (await device.popErrorScope()) {
      b.destroy();
      throw new WebGpuRunError(`out of GPU memory allocating ${label} (${formatBytes(size)}). Use a smaller batch.`);
    }
    this.buffers.push(b);
    return b;
  }

  protected async data(label: string, words: ArrayBufferView): Promise<GPUBuffer> {
    const b = await this.buffer(label, words.byteLength, RW());
    this.ctx.device.queue.writeBuffer(b, 0, words.buffer, words.byteOffset, words.byteLength);
    return b;
  }

  protected uniform(data: ArrayBuffer): GPUBuffer {
    const b = this.ctx.device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.ctx.device.queue.writeBuffer(b, 0, data);
    this.buffers.push(b);
    return b;
  }

  protected bind(p: GPUComputePipeline, entries: Record<number, GPUBuffer>): GPUBindGroup {
    return this.ctx.device.createBindGroup({
      layout: p.getBindGroupLayout(0),
      entries: Object.entries(entries).map(([binding, buffer]) => ({ binding: Number(binding), resource: { buffer } })),
    });
  }

  protected put(b: GPUBuffer, a: Float32Array, f16: boolean): void {
    const data = f16 ? toHalfArray(a) : a;
    this.ctx.device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
  }

  /** N(0, 1) values on the GPU (fill-kernel.ts), one stream per tensor. */
  protected async fill(targets: [GPUBuffer, number][], seed: number, elem: 'f32' | 'f16'): Promise<void> {
    const { device, limits } = this.ctx;
    const pipe = await pipeline(device, fillKernelWgsl(elem));
    const enc = device.createCommandEncoder();
    const tmp: GPUBuffer[] = [];
    targets.forEach(([buf, count], stream) => {
      const groups = Math.ceil(count / 256);
      const x = Math.min(groups, limits.maxWorkgroupsPerDim);
      const u = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(u, 0, new Uint32Array([count, (seed * 7919 + (stream + 1) * 104729) >>> 0, x * 256, 0]));
      tmp.push(u);
      const pass = enc.beginComputePass();
      pass.setPipeline(pipe);
      pass.setBindGroup(0, this.bind(pipe, { 0: u, 1: buf }));
      pass.dispatchWorkgroups(x, Math.ceil(groups / x), 1);
      pass.end();
    });
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    tmp.forEach((b) => b.destroy());
  }
}

export interface VarlenRunOptions {
  path: WebGpuPath;
  /** 'row' (the default where it fits) or 'tiled', as backend.ts's RunOptions. */
  flashKernel?: 'row' | 'tiled';
  rowPrefs?: Partial<Pick<RowKernelConfig, 'tpr' | 'rpt' | 'threads' | 'bc' | 'sc'>>;
  /** Heads per launch-order group (grid-order.ts); chooseHeadGroup's when absent. */
  headGroup?: number;
  /** flash-matrix: preferred subgroup-matrix tile (Q is always staged in a varlen kernel). */
  matrix?: MatrixTilePrefs;
}

/** The paths the varlen forward runs on: every flash kernel. */
export const VARLEN_PATHS: WebGpuPath[] = ['flash-f32', 'flash-f16', 'flash-subgroups', 'flash-matrix'];

export class VarlenGpuRun extends ServingRun {
  private q!: GPUBuffer;
  private k!: GPUBuffer;
  private v!: GPUBuffer;
  private o!: GPUBuffer;
  private lse!: GPUBuffer;
  /** Query blocks launched per head (no padding: Σ ceil(n_b / BM)). */
  tiles = 0;

  private constructor(
    ctx: WebGpuContext,
    readonly vp: VarlenProblem,
    readonly path: WebGpuPath,
  ) {
    super(ctx);
  }

  static async create(ctx: WebGpuContext, vp: VarlenProblem, opts: VarlenRunOptions): Promise<VarlenGpuRun> {
    if (ctx.lost) throw new WebGpuRunError(ctx.lost);
    if (!VARLEN_PATHS.includes(opts.path)) {
      throw new WebGpuRunError(
        `the varlen forward runs on ${VARLEN_PATHS.join(', ')}; '${PATH_LABELS[opts.path] ?? opts.path}' runs dense [B, H, N, d] problems only`,
      );
    }
    if (!ctx.paths.includes(opts.path)) throw new WebGpuRunError(`this adapter does not offer the '${PATH_LABELS[opts.path]}' path`);
    if (vp.cuSeqlensK.length !== vp.cuSeqlensQ.length) {
      throw new ProblemError(
        'cu_seqlens_k',
        `must have the same length as cu_seqlens_q (B + 1 = ${vp.cuSeqlensQ.length}), got ${vp.cuSeqlensK.length}`,
      );
    }
    checkOffsets('cu_seqlens_q', vp.cuSeqlensQ, totalQ(vp), 'q');
    checkOffsets('cu_seqlens_k', vp.cuSeqlensK, totalK(vp), 'k');
    validateProblem(sequenceProblem(vp.base, 1, 1));
    const run = new VarlenGpuRun(ctx, vp, opts.path);
    try {
      await run.build(opts);
    } catch (e) {
      run.destroy();
      throw e;
    }
    return run;
  }

  private async build(opts: VarlenRunOptions): Promise<void> {
    const { ctx, vp } = this;
    const { hq, hk, d, dv } = vp.base;
    const tq = totalQ(vp);
    const tk = totalK(vp);
    const elem = pathElem(this.path);
    const eb = elem === 'f16' ? 2 : 4;
    const score = scoreSpec(sequenceProblem(vp.base, 1, 1));
    const subgroupMin = this.path === 'flash-subgroups' ? ctx.subgroupMinSize : 0;
    const row =
      opts.flashKernel === 'tiled' || this.path === 'flash-matrix'
        ? undefined
        : chooseRowConfig(ctx.limits, { elem, d, dv, score, subgroupMin }, opts.rowPrefs);
    let code: string;
    let bm: number;
    let pipe: GPUComputePipeline | undefined;
    if (this.path === 'flash-matrix') {
      // Q staged: a matrix load straight from the Q buffer would run past a sequence's rows.
      const prefs = { ...opts.matrix, qStaged: true };
      let cfg = chooseMatrixTile(ctx, { d, dv, nq: 1 }, score, true, prefs);
      let note = '';
      try {
        pipe = await pipeline(ctx.device, matrixKernelWgsl({ ...cfg, varlen: true }));
      } catch (e) {
        if (!cfg.subgroupId) throw e;
        // as backend.ts: a compiler without subgroup_id runs one subgroup per workgroup
        cfg = chooseMatrixTile(ctx, { d, dv, nq: 1 }, score, false, prefs);
        pipe = await pipeline(ctx.device, matrixKernelWgsl({ ...cfg, varlen: true }));
        note = ' (subgroup_id rejected by the compiler, so one subgroup per workgroup)';
      }
      const L = matrixLayout(cfg);
      bm = L.bm;
      code = '';
      this.config = `varlen subgroup-matrix kernel: ${cfg.m}×${cfg.n}×${cfg.k} f16, BM=${L.bm} BN=${cfg.bn}, ${cfg.warps} subgroups of ${cfg.sg}, Q staged, ${L.bytes} B workgroup memory${note}`;
    } else if (row) {
      const L = rowLayout(row);
      bm = L.bm;
      code = rowKernelWgsl({ ...row, varlen: true });
      this.config = `varlen row kernel: ${row.rpt} row${row.rpt > 1 ? 's' : ''} per ${row.tpr} lane${row.tpr > 1 ? 's' : ''}, BM=${L.bm}, ${row.threads} threads, K/V chunks of ${row.bc} keys`;
    } else {
      const cfg = chooseFlashTile(ctx, { elem, subgroup: subgroupMin, d, dv });
      const L = flashLayout(cfg);
      bm = cfg.bm;
      code = flashKernelWgsl({ ...cfg, varlen: true });
      this.config = `varlen tiled kernel: BM=${cfg.bm} BN=${cfg.bn} DK=${cfg.dk} JC=${cfg.jc}, ${L.threads} threads`;
    }
    const tiles = varlenTiles(vp.cuSeqlensQ, vp.cuSeqlensK, bm, { causal: vp.base.causal, window: vp.base.window });
    this.tiles = tiles.length;
    this.q = await this.buffer('q', tq * hq * d * eb, RW());
    this.k = await this.buffer('k', tk * hk * d * eb, RW());
    this.v = await this.buffer('v', tk * hk * dv * eb, RW());
    this.o = await this.buffer('o', tq * hq * dv * 4, RW());
    this.lse = await this.buffer('lse', hq * tq * 4, RW());
    const probe = sequenceProblem(vp.base, 1, 1);
    const aux = await this.data('ALiBi slopes and sinks', packAux(probe));
    const table = await this.data('cu_seqlens and the tile list', packVarlenTable(vp.cuSeqlensQ, vp.cuSeqlensK, tiles));
    // Every row of O and LSE is written by a tile, except rows of sequences without keys'
    // tiles, which write zeros and −inf themselves: nothing to clear.
    if (tiles.length === 0) return; // no query rows at all
    if (tiles.length > ctx.limits.maxWorkgroupsPerDim)
      throw new WebGpuRunError(
        `${tiles.length} query blocks per head exceed the adapter's dispatch limit (${ctx.limits.maxWorkgroupsPerDim})`,
      );
    const headGroup = chooseHeadGroup(true, tiles.length, hq, opts.headGroup);
    pipe ??= await pipeline(ctx.device, code);
    this.config += `; ${tiles.length} (sequence, query block) tiles per head, longest first in groups of ${headGroup} heads`;
    this.dispatches.push({
      name: 'varlen flash forward',
      pipeline: pipe,
      bindGroup: this.bind(pipe, {
        0: this.uniform(packParams({ ...probe, nq: tq, nk: tk }, { headGroup })),
        1: this.q,
        2: this.k,
        3: this.v,
        4: this.o,
        5: this.lse,
        6: aux,
        [VARLEN_BINDING]: table,
      }),
      workgroups: [tiles.length, hq, 1],
    });
  }

  upload(x: VarlenInputs): void {
    const { hq, hk, d, dv } = this.vp.base;
    const tq = totalQ(this.vp);
    const tk = totalK(this.vp);
    if (x.q.length !== tq * hq * d)
      throw new ProblemError('q', `expected [total_q=${tq}, Hq=${hq}, d=${d}] = ${tq * hq * d} elements, got ${x.q.length}`);
    if (x.k.length !== tk * hk * d)
      throw new ProblemError('k', `expected [total_k=${tk}, Hk=${hk}, d=${d}] = ${tk * hk * d} elements, got ${x.k.length}`);
    if (x.v.length !== tk * hk * dv)
      throw new ProblemError('v', `expected [total_k=${tk}, Hk=${hk}, dv=${dv}] = ${tk * hk * dv} elements, got ${x.v.length}`);
    const f16 = pathElem(this.path) === 'f16';
    this.put(this.q, x.q, f16);
    this.put(this.k, x.k, f16);
    this.put(this.v, x.v, f16);
  }

  async fillRandom(seed: number): Promise<void> {
    const { hq, hk, d, dv } = this.vp.base;
    const tq = totalQ(this.vp);
    const tk = totalK(this.vp);
    await this.fill(
      [
        [this.q, tq * hq * d],
        [this.k, tk * hk * d],
        [this.v, tk * hk * dv],
      ],
      seed,
      pathElem(this.path),
    );
  }

  /** o [total_q, Hq, dv] and lse [Hq, total_q] (flash_attn_varlen_func's layout). */
  async read(): Promise<{ o: Float32Array; lse: Float32Array }> {
    const { hq, dv } = this.vp.base;
    const tq = totalQ(this.vp);
    const [o, lse] = await Promise.all([this.readBuffer(this.o, 0, tq * hq * dv * 4), this.readBuffer(this.lse, 0, hq * tq * 4)]);
    return { o: new Float32Array(o), lse: new Float32Array(lse) };
  }

  /** Inputs as stored (f16 paths: rounded), for checks that recompute from what the GPU saw. */
  async readInputs(): Promise<VarlenInputs> {
    const { hq, hk, d, dv } = this.vp.base;
    const f16 = pathElem(this.path) === 'f16';
    const get = async (b: GPUBuffer, n: number) => {
      const raw = await this.readBuffer(b, 0, n * (f16 ? 2 : 4));
      if (!f16) return new Float32Array(raw);
      return Float32Array.from(new Uint16Array(raw), halfToFloat);
    };
    const tq = totalQ(this.vp);
    const tk = totalK(this.vp);
    return { q: await get(this.q, tq * hq * d), k: await get(this.k, tk * hk * d), v: await get(this.v, tk * hk * dv) };
  }

  /** Sequences in the batch. */
  get batch(): number {
    return varlenBatch(this.vp);
  }
}

export interface PagedRunOptions {
  /** Group-kernel tuning (decode-group-kernel.ts) and the workgroup target of the split choice. */
  decodePrefs?: DecodeGroupPrefs & { workgroups?: number };
  /** Pages per split, instead of the choice for about 2048 workgroups (tests: many splits). */
  splitPages?: number;
}

/** Placeholders with a length only: validatePaged reads the inputs' sizes, which create() knows before any data exists. */
const sized = (n: number) => ({ length: n }) as unknown as Float32Array;

export class PagedDecodeGpuRun extends ServingRun {
  private q!: GPUBuffer;
  private kCache!: GPUBuffer;
  private vCache!: GPUBuffer;
  private o!: GPUBuffer;
  private lse!: GPUBuffer;
  work!: PagedWork;
  /** Query heads per workgroup (a key head's whole group unless its rows exceed the group kernel's limit). */
  headChunk = 1;

  private constructor(
    ctx: WebGpuContext,
    readonly pp: PagedProblem,
  ) {
    super(ctx);
  }

  static async create(ctx: WebGpuContext, pp: PagedProblem, opts: PagedRunOptions = {}): Promise<PagedDecodeGpuRun> {
    if (ctx.lost) throw new WebGpuRunError(ctx.lost);
    const { hq, hk, d, dv } = pp.base;
    validatePaged(pp, {
      q: sized(pp.batch * hq * pp.nq * d),
      kCache: sized(pp.numPages * pp.pageSize * hk * d),
      vCache: sized(pp.numPages * pp.pageSize * hk * dv),
    });
    validateProblem(sequenceProblem(pp.base, Math.max(1, pp.nq), 1));
    const run = new PagedDecodeGpuRun(ctx, pp);
    try {
      await run.build(opts);
    } catch (e) {
      run.destroy();
      throw e;
    }
    return run;
  }

  private async build(opts: PagedRunOptions): Promise<void> {
    const { ctx, pp } = this;
    const { hq, hk, d, dv } = pp.base;
    const B = pp.batch;
    const nq = pp.nq;
    const probe = sequenceProblem(pp.base, Math.max(1, nq), 1);
    const subgroupMin = ctx.paths.includes('flash-subgroups') ? ctx.subgroupMinSize : 0;
    // Query heads per workgroup: the key head's whole group where its rows fit, else the largest divisor that does.
    const g = hq / hk;
    let chunk = g;
    while (chunk > 1 && (chunk * Math.max(1, nq) > DECODE_GROUP_MAX_ROWS || g % chunk !== 0)) chunk--;
    const group = chooseDecodeGroup(
      { d, dv, hq: chunk, hk: 1, nq: Math.max(1, nq), pageSize: pp.pageSize },
      scoreSpec(probe),
      subgroupMin,
      ctx.limits.maxWorkgroupStorage,
      opts.decodePrefs,
    );
    if (!group) {
      throw new WebGpuRunError(
        `paged flash-decoding on WebGPU needs head dims that are multiples of 4 and at most 256 (got d=${d}, dv=${dv}), at most ${DECODE_GROUP_MAX_ROWS} query rows per sequence (Nq = ${nq}) and subgroups on this adapter`,
      );
    }
    this.headChunk = chunk;
    this.work = pagedWork(pp.cacheSeqlens, pp.pageSize, hk, opts.decodePrefs?.workgroups, opts.splitPages);
    const w = this.work;
    // q and the caches in f16 (the group kernel unpacks u32 words: no shader-f16 needed).
    this.q = await this.buffer('q', B * hq * nq * d * 2, RW());
    this.kCache = await this.buffer('k_cache', pp.numPages * pp.pageSize * hk * d * 2, RW());
    this.vCache = await this.buffer('v_cache', pp.numPages * pp.pageSize * hk * dv * 2, RW());
    this.o = await this.buffer('o', B * hq * nq * dv * 4, RW());
    this.lse = await this.buffer('lse', B * hq * nq * 4, RW());
    const aux = await this.data('ALiBi slopes and sinks', packAux(probe));
    const table = await this.data(
      'block_table, cache_seqlens and the split list',
      packPagedTable(pp.cacheSeqlens, pp.blockTable, pp.maxPages, w),
    );
    const splitsTotal = w.base[B];
    const opart = await this.buffer('partial O', Math.max(1, splitsTotal) * hq * nq * dv * 4, GPUBufferUsage.STORAGE);
    const lpart = await this.buffer('partial LSE', Math.max(1, splitsTotal) * hq * nq * 4, GPUBufferUsage.STORAGE);
    this.config = `paged, f16 q and K/V cache: ${w.items.length} (sequence, split) work items of ${w.splitLen} keys (${w.splitLen / pp.pageSize} pages of ${pp.pageSize}) per ${chunk === g ? 'key head' : `${chunk} of a key head's ${g} query heads`}, one block-table read per page; ${group.lpk} lanes per key, ${group.ku} key${group.ku > 1 ? 's' : ''} per step, ${group.threads} threads, ${decodeGroupBytes(group)} B workgroup memory`;
    if (nq === 0) return;
    const [psplit, pcomb] = await Promise.all([
      pipeline(ctx.device, decodeGroupKernelWgsl(group)),
      pipeline(ctx.device, pagedCombineKernelWgsl(nq, dv)),
    ]);
    const params = this.uniform(packParams({ ...probe, batch: B, nq }, { splits: splitsTotal, splitLen: w.splitLen }));
    if (w.items.length > ctx.limits.maxWorkgroupsPerDim)
      throw new WebGpuRunError(`${w.items.length} work items exceed the adapter's dispatch limit (${ctx.limits.maxWorkgroupsPerDim})`);
    if (w.items.length > 0) {
      this.dispatches.push({
        name: 'paged split K/V',
        pipeline: psplit,
        bindGroup: this.bind(psplit, {
          0: params,
          1: this.q,
          2: this.kCache,
          3: this.vCache,
          4: opart,
          5: lpart,
          6: aux,
          [PAGED_BINDING]: table,
        }),
        workgroups: [w.items.length, hq / chunk, 1],
      });
    }
    this.dispatches.push({
      name: 'LSE combine',
      pipeline: pcomb,
      bindGroup: this.bind(pcomb, { 0: params, 1: opart, 2: lpart, 4: this.o, 5: this.lse, 6: aux, [PAGED_BINDING]: table }),
      workgroups: [nq, B * hq, 1],
    });
  }

  upload(x: PagedInputs): void {
    validatePaged(this.pp, x);
    this.put(this.q, x.q, true);
    this.put(this.kCache, x.kCache, true);
    this.put(this.vCache, x.vCache, true);
  }

  /** N(0, 1) q and caches (every slot, owned or not). */
  async fillRandom(seed: number): Promise<void> {
    const { hq, hk, d, dv } = this.pp.base;
    const slots = this.pp.numPages * this.pp.pageSize;
    await this.fill(
      [
        [this.q, this.pp.batch * hq * this.pp.nq * d],
        [this.kCache, slots * hk * d],
        [this.vCache, slots * hk * dv],
      ],
      seed,
      'f16',
    );
  }

  /** o [B, Hq, Nq, dv] and lse [B, Hq, Nq] (BHND, as engine/layouts' pagedOutput). */
  async read(): Promise<{ o: Float32Array; lse: Float32Array }> {
    const { hq, dv } = this.pp.base;
    const n = this.pp.batch * hq * this.pp.nq;
    const [o, lse] = await Promise.all([this.readBuffer(this.o, 0, n * dv * 4), this.readBuffer(this.lse, 0, n * 4)]);
    return { o: new Float32Array(o), lse: new Float32Array(lse) };
  }

  /** Page `page` of a cache as stored ([page_size, Hk, e] values, f16 widened). */
  async readPage(which: 'k' | 'v', page: number): Promise<Float32Array> {
    const { hk, d, dv } = this.pp.base;
    const e = which === 'k' ? d : dv;
    const per = this.pp.pageSize * hk * e;
    return this.readHalves(which === 'k' ? this.kCache : this.vCache, page * per, per);
  }

  /** q as stored, [B, Hq, Nq, d]. */
  async readQ(): Promise<Float32Array> {
    const { hq, d } = this.pp.base;
    return this.readHalves(this.q, 0, this.pp.batch * hq * this.pp.nq * d);
  }

  /** `count` f16 values from element `first` (even: pages and q hold even counts). */
  private async readHalves(b: GPUBuffer, first: number, count: number): Promise<Float32Array> {
    return Float32Array.from(new Uint16Array(await this.readBuffer(b, first * 2, count * 2)), halfToFloat);
  }

  /** Unique K/V bytes the split pass must read: every owned token's K and V rows once per key head, f16. */
  uniqueKvBytes(): number {
    const { hk, d, dv } = this.pp.base;
    return this.pp.cacheSeqlens.reduce((a, L) => a + L, 0) * hk * (d + dv) * 2;
  }
}
