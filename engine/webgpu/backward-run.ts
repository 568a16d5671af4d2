// The attention backward on WebGPU (f32): uploads Q, K, V, dO and the forward's O and LSE,
// runs the three kernels of backward-kernels.ts, reads dQ, dK, dV back. Every tensor is
// BHND, f32, bound whole (one binding each): problems past one binding are refused.

import { alibiSlopes, softmaxScale, validateProblem, type AttentionProblem } from '../problem.ts';
import { formatBytes } from './binding-windows.ts';
import { WebGpuRunError } from './backend.ts';
import { bwdDkDvWgsl, bwdDotWgsl, bwdDqWgsl, BWD_THREADS, type BackwardKernelShape } from './backward-kernels.ts';
import type { WebGpuContext } from './device.ts';
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

export class BackwardRun {
  private buffers: GPUBuffer[] = [];
  private dispatches: Dispatch[] = [];
  private t: Record<'q' | 'k' | 'v' | 'o' | 'lse' | 'dO' | 'dsum' | 'dq' | 'dk' | 'dv' | 'slopes', GPUBuffer> = {} as never;
  readonly config: string;

  private constructor(
    readonly ctx: WebGpuContext,
    readonly problem: AttentionProblem,
  ) {
    this.config = `f32 backward: D = rowsum(dO∘O); dK, dV with ${BWD_THREADS} keys per workgroup; dQ with ${BWD_THREADS} rows per workgroup (no atomics, deterministic)`;
  }

  static async create(ctx: WebGpuContext, problem: AttentionProblem): Promise<BackwardRun> {
    validateProblem(problem);
    if (ctx.lost) throw new WebGpuRunError(ctx.lost);
    const run = new BackwardRun(ctx, problem);
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
      throw new WebGpuRunError(`${label} needs ${formatBytes(bytes)} in one binding; this adapter allows at most ${formatBytes(this.ctx.limits.maxStorageBinding)}. Use a smaller problem.`);
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
    this.t.q = await this.buffer('Q', rows * p.d, S);
    this.t.k = await this.buffer('K', keys * p.d, S);
    this.t.v = await this.buffer('V', keys * p.dv, S);
    this.t.o = await this.buffer('O', rows * p.dv, S);
    this.t.dO = await this.buffer('dO', rows * p.dv, S);
    this.t.lse = await this.buffer('LSE', rows, S);
    this.t.dsum = await this.buffer('D', rows, S);
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

    const shape: BackwardKernelShape = { d: p.d, dv: p.dv, group: p.hq / p.hk, softcap: p.softcap !== undefined, alibi: slopes !== undefined };
    const pipe = async (label: string, code: string): Promise<GPUComputePipeline> => {
      device.pushErrorScope('validation');
      const module = device.createShaderModule({ label, code });
      const pl = await device.createComputePipelineAsync({ label, layout: 'auto', compute: { module, entryPoint: 'main' } }).catch((e: unknown) => e as Error);
      const err = await device.popErrorScope();
      if (pl instanceof Error || err) throw new WebGpuRunError(`the ${label} kernel did not compile: ${pl instanceof Error ? pl.message : err?.message}`);
      return pl;
    };
    const bind = (pl: GPUComputePipeline, entries: Record<number, GPUBuffer>): GPUBindGroup =>
      device.createBindGroup({ layout: pl.getBindGroupLayout(0), entries: Object.entries(entries).map(([b, buffer]) => ({ binding: Number(b), resource: { buffer } })) });
    const withSlopes = (e: Record<number, GPUBuffer>) => (shape.alibi ? { ...e, 9: this.t.slopes } : e);

    const dot = await pipe('backward D', bwdDotWgsl(p.dv));
    const dkdv = await pipe('backward dK dV', bwdDkDvWgsl(shape));
    const dq = await pipe('backward dQ', bwdDqWgsl(shape));
    const t = this.t;
    const dotGroups = Math.ceil(rows / BWD_THREADS);
    this.dispatches.push(
      { name: 'D = rowsum(dO∘O)', pipeline: dot, bindGroup: bind(dot, { 0: uni, 1: t.o, 2: t.dO, 3: t.dsum }), workgroups: [Math.min(dotGroups, 65535), Math.ceil(dotGroups / 65535), 1] },
      { name: 'dK, dV', pipeline: dkdv, bindGroup: bind(dkdv, withSlopes({ 0: uni, 1: t.q, 2: t.k, 3: t.v, 4: t.dO, 5: t.lse, 6: t.dsum, 7: t.dk, 8: t.dv })), workgroups: [Math.ceil(p.nk / BWD_THREADS), p.batch * p.hk, 1] },
      { name: 'dQ', pipeline: dq, bindGroup: bind(dq, withSlopes({ 0: uni, 1: t.q, 2: t.k, 3: t.v, 4: t.dO, 5: t.lse, 6: t.dsum, 7: t.dq })), workgroups: [Math.ceil(p.nq / BWD_THREADS), p.batch * p.hq, 1] },
    );
  }

  upload(x: BackwardInputs): void {
    const q = this.ctx.device.queue;
    // A row that sees no key has LSE = −∞: a huge finite value gives it P = 0 without an inf in the shader.
    const lse = Float32Array.from(x.lse, (l) => (Number.isFinite(l) ? l : 3.0e38));
    q.writeBuffer(this.t.q, 0, x.q);
    q.writeBuffer(this.t.k, 0, x.k);
    q.writeBuffer(this.t.v, 0, x.v);
    q.writeBuffer(this.t.o, 0, x.o);
    q.writeBuffer(this.t.dO, 0, x.dO);
    q.writeBuffer(this.t.lse, 0, lse);
  }

  execute(): Promise<KernelTime[]> {
    return runTimed(this.ctx.device, this.dispatches, this.ctx.timestamps);
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
    return { dq: await this.readBack(this.t.dq, rows * p.d), dk: await this.readBack(this.t.dk, keys * p.d), dv: await this.readBack(this.t.dv, keys * p.dv) };
  }

  destroy(): void {
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
  }
}
