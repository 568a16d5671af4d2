// The attention backward on WebGPU: uploads Q, K, V, dO and the forward's O and LSE, runs
// the kernels of one path, reads dQ, dK, dV back (f32). Two paths:
//   flash-f32     the three f32 kernels of backward-kernels.ts (every variant, exact to 1e-6);
//   flash-matrix  the four kernels of backward-matrix-kernel.ts: f16 Q, K, V, dO on subgroup
//                 matrices, dQ added into a fixed-point accumulator.
// Every tensor is BHND and bound whole (one binding each): problems past one binding are refused.

import { alibiSlopes, softmaxScale, validateProblem, type AttentionProblem } from '../core/problem.ts';
import { formatBytes } from './binding-windows.ts';
import { pipeline } from './backend.ts';
import { WebGpuRunError } from './gpu-run.ts';
import { bwdDkDvWgsl, bwdDotWgsl, bwdDqWgsl, BWD_THREADS, type BackwardKernelShape } from './backward-kernels.ts';
import {
  bwdmClearWgsl,
  bwdmDqWgsl,
  bwdmKvWgsl,
  bwdmMainWgsl,
  bwdmRowsWgsl,
  chooseMatrixBackward,
  matrixBackwardLayout,
  type MatrixBackwardPrefs,
} from './backward-matrix-kernel.ts';
import type { WebGpuContext } from './device.ts';
import { toHalfArray } from './half.ts';
import { runTimed, type Dispatch, type KernelTime } from './timer.ts';

export interface BackwardInputs {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  /** The forward's output and natural-log LSE (−∞ for rows that see no key). */
  o: Float32Array;
  lse: Float32Array;
  dO: Float32Array;
}

export interface BackwardGradients {
  dq: Float32Array;
  dk: Float32Array;
  dv: Float32Array;
}

/** The backward's FLOPs by the FlashAttention convention: 2.5 × the forward's 4·B·H·Nq·Nk·d, halved when causal. */
export function backwardFlops(p: AttentionProblem): number {
  return 2.5 * 4 * p.batch * p.hq * p.nq * p.nk * p.d * (p.causal ? 0.5 : 1);
}

/** The backward's paths: the f32 kernels, or f16 subgroup matrices (tensor cores). */
export type BackwardPath = 'flash-f32' | 'flash-matrix';

export class BackwardRun {
  private buffers: GPUBuffer[] = [];
  private dispatches: Dispatch[] = [];
  private t: Record<'q' | 'k' | 'v' | 'o' | 'lse' | 'dO' | 'dsum' | 'dq' | 'dk' | 'dv' | 'slopes' | 'kvs' | 'rows' | 'dqacc', GPUBuffer> =
    {} as never;
  config = '';

  private constructor(
    readonly ctx: WebGpuContext,
    readonly problem: AttentionProblem,
    readonly path: BackwardPath,
    private readonly prefs: MatrixBackwardPrefs,
  ) {}

  static async create(
    ctx: WebGpuContext,
    problem: AttentionProblem,
    path: BackwardPath = 'flash-f32',
    prefs: MatrixBackwardPrefs = {},
  ): Promise<BackwardRun> {
    validateProblem(problem);
    if (problem.mask !== undefined) {
      throw new WebGpuRunError(
        'mask_mod / score_mod text runs in the stepper; the WebGPU kernels take the built-in causal, window, ALiBi, softcap and sinks',
      );
    }
    if (ctx.lost) throw new WebGpuRunError(ctx.lost);
    if (path === 'flash-matrix' && !ctx.paths.includes('flash-matrix')) {
      throw new WebGpuRunError(
        'the flash-matrix backward needs f16 subgroup matrices (shader-f16 and chromium-experimental-subgroup-matrix), which this adapter does not offer; use the flash-f32 backward',
      );
    }
    const run = new BackwardRun(ctx, problem, path, prefs);
    try {
      await run.build();
    } catch (e) {
      run.destroy();
      throw e;
    }
    return run;
  }

  private async buffer(label: string, floats: number, usage: number): Promise<GPUBuffer> {
    const bytes = Math.max(16, floats * 4);
    if (bytes > this.ctx.limits.maxStorageBinding) {
      throw new WebGpuRunError(
        `${label} needs ${formatBytes(bytes)} in one binding; this adapter allows at most ${formatBytes(this.ctx.limits.maxStorageBinding)}. Use a smaller problem.`,
      );
    }
    const { device } = this.ctx;
    device.pushErrorScope('out-of-memory');
    const b = device.createBuffer({ label, size: bytes, usage });
    if (await device.popErrorScope()) {
      b.destroy();
      throw new WebGpuRunError(`out of GPU memory allocating ${label} (${formatBytes(bytes)}). Use a smaller problem.`);
    }
    this.buffers.push(b);
    return b;
  }

  private async build(): Promise<void> {
    const p = this.problem;
    const { device } = this.ctx;
    const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    const rows = p.batch * p.hq * p.nq;
    const keys = p.batch * p.hk * p.nk;
    // f16 inputs take half the floats' bytes (rounded up to whole 4-byte words).
    const el = this.path === 'flash-matrix' ? 0.5 : 1;
    const words = (n: number) => Math.ceil(n * el);
    this.t.q = await this.buffer('Q', words(rows * p.d), S);
    this.t.k = await this.buffer('K', words(keys * p.d), S);
    this.t.v = await this.buffer('V', words(keys * p.dv), S);
    this.t.o = await this.buffer('O', rows * p.dv, S);
    this.t.dO = await this.buffer('dO', words(rows * p.dv), S);
    this.t.lse = await this.buffer('LSE', rows, S);
    if (this.path === 'flash-matrix') {
      this.t.kvs = await this.buffer('max |K|, max ‖V‖', p.batch * p.hk * 2, S);
      this.t.rows = await this.buffer('LSE, D, dQ factor', rows * 4, S);
      this.t.dqacc = await this.buffer('dQ accumulator', rows * p.d, S);
    } else {
      this.t.dsum = await this.buffer('D', rows, S);
    }
    this.t.dq = await this.buffer('dQ', rows * p.d, S);
    this.t.dk = await this.buffer('dK', keys * p.d, S);
    this.t.dv = await this.buffer('dV', keys * p.dv, S);
    const slopes = alibiSlopes(p);
    this.t.slopes = await this.buffer('ALiBi slopes', p.hq, S);
    if (slopes) device.queue.writeBuffer(this.t.slopes, 0, new Float32Array(slopes));

    // Causal folds into the right edge of the band (rel = j − (i + Nk − Nq) ≤ 0).
    const right = p.causal ? (p.window && p.window.right >= 0 ? Math.min(0, p.window.right) : 0) : (p.window?.right ?? -1);
    const prm = new ArrayBuffer(48);
    const u = new Uint32Array(prm);
    const f = new Float32Array(prm);
    const i = new Int32Array(prm);
    u[0] = p.nq;
    u[1] = p.nk;
    u[2] = p.hq;
    u[3] = p.hk;
    f[4] = softmaxScale(p);
    f[5] = p.softcap ?? 0;
    i[6] = p.window?.left ?? -1;
    i[7] = right;
    i[8] = p.nk - p.nq;
    u[9] = p.batch;
    const uni = device.createBuffer({ size: prm.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(uni, 0, prm);
    this.buffers.push(uni);

    const shape: BackwardKernelShape = {
      d: p.d,
      dv: p.dv,
      group: p.hq / p.hk,
      softcap: p.softcap !== undefined,
      alibi: slopes !== undefined,
    };
    // The backend's compile-and-cache (its WGSL errors carry line numbers), with the kernel named.
    const pipe = async (label: string, code: string): Promise<GPUComputePipeline> => {
      try {
        return await pipeline(device, code);
      } catch (e) {
        throw new WebGpuRunError(`the ${label} kernel did not compile: ${e instanceof Error ? e.message : String(e)}`);
      }
    };
    const bind = (pl: GPUComputePipeline, entries: Record<number, GPUBuffer>): GPUBindGroup =>
      device.createBindGroup({
        layout: pl.getBindGroupLayout(0),
        entries: Object.entries(entries).map(([b, buffer]) => ({ binding: Number(b), resource: { buffer } })),
      });
    const withSlopes = (e: Record<number, GPUBuffer>) => (shape.alibi ? { ...e, 9: this.t.slopes } : e);

    const t = this.t;
    const grid = (n: number, per: number): [number, number, number] => {
      const groups = Math.ceil(n / per);
      return [Math.min(groups, 65535), Math.ceil(groups / 65535), 1];
    };
    if (this.path === 'flash-matrix') {
      const c = chooseMatrixBackward(
        this.ctx,
        { d: p.d, dv: p.dv, group: p.hq / p.hk, softcap: shape.softcap, alibi: shape.alibi },
        this.prefs,
      );
      const L = matrixBackwardLayout(c);
      this.config = `f16 subgroup-matrix backward (${c.t}×${c.t}×${c.t}${this.prefs.rewriteMain ? ', a benchmark study: wrong dQ' : ''}${c.stagger ? '' : ', unstaggered'}): ${c.warps} subgroups × ${c.t} keys per workgroup (BN ${L.bn}), query tiles of ${c.bm} rows, ${(L.bytes / 1024).toFixed(1)} KB workgroup memory; dQ added into a fixed-point i32 accumulator (atomic, deterministic)${c.overlapAdds ? " during the next tile's MMAs" : ''}`;
      // The prep kernels put one subgroup on a key or row: the largest subgroup size gives the fewest per workgroup.
      const sgMax = this.ctx.subgroupMaxSize || 32;
      const clear = await pipe('backward clear maxima', bwdmClearWgsl());
      const kv = await pipe('backward max |K|, max ‖V‖', bwdmKvWgsl(p.d, p.dv));
      const rowsK = await pipe('backward D and dQ factor', bwdmRowsWgsl(p.d, p.dv, p.hq / p.hk));
      const main = await pipe('backward dK dV dQ (subgroup matrices)', (this.prefs.rewriteMain ?? ((w: string) => w))(bwdmMainWgsl(c)));
      const conv = await pipe('backward dQ out', bwdmDqWgsl(p.d));
      this.dispatches.push(
        { name: 'clear', pipeline: clear, bindGroup: bind(clear, { 0: uni, 1: t.kvs }), workgroups: [1, 1, 1] },
        {
          name: 'max |K|, max ‖V‖',
          pipeline: kv,
          bindGroup: bind(kv, { 0: uni, 1: t.k, 2: t.v, 3: t.kvs }),
          workgroups: [Math.ceil(p.nk / (256 / sgMax)), p.batch * p.hk, 1],
        },
        {
          name: 'D, dQ factor',
          pipeline: rowsK,
          bindGroup: bind(rowsK, { 0: uni, 1: t.o, 2: t.dO, 3: t.lse, 4: t.kvs, 5: t.rows, 6: t.dqacc }),
          workgroups: grid(rows, 256 / sgMax),
        },
        {
          name: 'dK, dV, dQ',
          pipeline: main,
          bindGroup: bind(main, withSlopes({ 0: uni, 1: t.q, 2: t.k, 3: t.v, 4: t.dO, 5: t.rows, 6: t.dqacc, 7: t.dk, 8: t.dv })),
          workgroups: [Math.ceil(p.nk / L.bn), p.batch * p.hk, 1],
        },
        {
          name: 'dQ out',
          pipeline: conv,
          bindGroup: bind(conv, { 0: uni, 1: t.rows, 2: t.dqacc, 3: t.dq }),
          workgroups: grid(rows * p.d, 256),
        },
      );
      return;
    }
    this.config = `f32 backward: D = rowsum(dO∘O); dK, dV with ${BWD_THREADS} keys per workgroup; dQ with ${BWD_THREADS} rows per workgroup (no atomics, deterministic)`;
    const dot = await pipe('backward D', bwdDotWgsl(p.dv));
    const dkdv = await pipe('backward dK dV', bwdDkDvWgsl(shape));
    const dq = await pipe('backward dQ', bwdDqWgsl(shape));
    this.dispatches.push(
      {
        name: 'D = rowsum(dO∘O)',
        pipeline: dot,
        bindGroup: bind(dot, { 0: uni, 1: t.o, 2: t.dO, 3: t.dsum }),
        workgroups: grid(rows, BWD_THREADS),
      },
      {
        name: 'dK, dV',
        pipeline: dkdv,
        bindGroup: bind(dkdv, withSlopes({ 0: uni, 1: t.q, 2: t.k, 3: t.v, 4: t.dO, 5: t.lse, 6: t.dsum, 7: t.dk, 8: t.dv })),
        workgroups: [Math.ceil(p.nk / BWD_THREADS), p.batch * p.hk, 1],
      },
      {
        name: 'dQ',
        pipeline: dq,
        bindGroup: bind(dq, withSlopes({ 0: uni, 1: t.q, 2: t.k, 3: t.v, 4: t.dO, 5: t.lse, 6: t.dsum, 7: t.dq })),
        workgroups: [Math.ceil(p.nq / BWD_THREADS), p.batch * p.hq, 1],
      },
    );
  }

  upload(x: BackwardInputs): void {
    const q = this.ctx.device.queue;
    // A row that sees no key has LSE = −∞: a huge finite value gives it P = 0 without an inf in the shader.
    const lse = Float32Array.from(x.lse, (l) => (Number.isFinite(l) ? l : 3.0e38));
    const put = (b: GPUBuffer, a: Float32Array) => {
      const data = this.path === 'flash-matrix' ? toHalfArray(a) : a;
      q.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    };
    put(this.t.q, x.q);
    put(this.t.k, x.k);
    put(this.t.v, x.v);
    q.writeBuffer(this.t.o, 0, x.o);
    put(this.t.dO, x.dO);
    q.writeBuffer(this.t.lse, 0, lse);
  }

  /** `repeat` runs back to back in one submission (timer.ts); the times are per run. */
  execute(repeat = 1): Promise<KernelTime[]> {
    return runTimed(this.ctx.device, this.dispatches, this.ctx.timestamps, repeat);
  }

  private async readBack(src: GPUBuffer, floats: number): Promise<Float32Array> {
    const { device } = this.ctx;
    const rb = device.createBuffer({ size: Math.max(16, floats * 4), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(src, 0, rb, 0, floats * 4);
    device.queue.submit([enc.finish()]);
    await rb.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(rb.getMappedRange().slice(0, floats * 4));
    rb.unmap();
    rb.destroy();
    return out;
  }

  async read(): Promise<BackwardGradients> {
    const p = this.problem;
    const rows = p.batch * p.hq * p.nq;
    const keys = p.batch * p.hk * p.nk;
    return {
      dq: await this.readBack(this.t.dq, rows * p.d),
      dk: await this.readBack(this.t.dk, keys * p.d),
      dv: await this.readBack(this.t.dv, keys * p.dv),
    };
  }

  destroy(): void {
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
  }
}
