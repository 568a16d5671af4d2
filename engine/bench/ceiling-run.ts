// Runs the ceiling microbenchmarks (ceiling-kernels.ts) on one WebGPU device: each kernel is
// compiled, run once to warm up, then timed `reps` times (GPU timestamps where the adapter has
// them); the median time gives the rate. A shape the compiler refuses comes back as a message.

import { storageStudyKernel, storageStudySet } from './ceiling-storage.ts';
import {
  barrierKernel,
  type CeilingKernel,
  expKernel,
  GRID_X,
  MMA_DEFAULTS,
  type MatrixShape,
  mmaKernel,
  type OperandSource,
  storageCopyGridKernel,
  storageCopyKernel,
  storageReadKernel,
  atomicAddKernel,
  workgroupRoundTripKernel,
} from './ceiling-kernels.ts';
import { attentionLoopKernel, attentionLoopSet } from './ceiling-attention-loop.ts';
import type { WebGpuContext } from '../webgpu/device.ts';
import { runTimed } from '../webgpu/timer.ts';

export interface CeilingRow {
  name: string;
  unit: CeilingKernel['unit'];
  /** Work per second (FLOP/s, byte/s, exp/s) or, for the barrier row, seconds per barrier. */
  rate: number;
  ms: number;
  clock: 'gpu' | 'wall';
}

export interface CeilingFailure {
  name: string;
  error: string;
}

/** Pseudo-random operand bits: f16 and f32 values of magnitude about 0.5, random bytes otherwise. */
function operandBytes(bytes: number, type: string): ArrayBuffer {
  let s = 0x2545f491;
  const next = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
  const buf = new ArrayBuffer(bytes);
  if (type === 'f16') {
    const h = new Uint16Array(buf);
    for (let i = 0; i < h.length; i++) h[i] = 0x3800 | (next() & 0x83ff);
  } else if (type === 'f32') {
    const f = new Float32Array(buf);
    for (let i = 0; i < f.length; i++) f[i] = (next() / 2 ** 32 - 0.5) * 1.5;
  } else {
    const u = new Uint32Array(buf);
    for (let i = 0; i < u.length; i++) u[i] = next();
  }
  return buf;
}

/** Compiles and times one kernel; the median of `reps` timed runs of `repeat` dispatches each. */
export async function timeCeilingKernel(
  ctx: WebGpuContext,
  k: CeilingKernel,
  operandType = 'f32',
  reps = 5,
  repeat = 4,
  /** Buffers kept across kernels (by binding, size and usage) instead of made and destroyed for each. */
  pool?: Map<string, GPUBuffer>,
): Promise<CeilingRow | CeilingFailure> {
  const { device } = ctx;
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code: k.wgsl });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error');
  if (errors.length > 0) {
    await device.popErrorScope();
    return { name: k.name, error: `WGSL refused: ${errors[0].message}` };
  }
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const buffers = k.buffers.map((size, i) => {
    const bytes = Math.ceil(size / 16) * 16;
    const key = `${i}:${bytes}:${!!k.allUsages}`;
    const kept = pool?.get(key);
    if (kept) return kept;
    const extra = k.allUsages ? GPUBufferUsage.COPY_SRC | GPUBufferUsage.VERTEX | GPUBufferUsage.INDEX | GPUBufferUsage.INDIRECT : 0;
    const b = device.createBuffer({
      size: bytes,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | extra,
      mappedAtCreation: !!k.mapped && i > 0,
    });
    if (i > 0 && k.mapped) {
      new Uint8Array(b.getMappedRange()).set(new Uint8Array(operandBytes(bytes, operandType)));
      b.unmap();
    } else if (i > 0) device.queue.writeBuffer(b, 0, operandBytes(bytes, operandType));
    pool?.set(key, b);
    return b;
  });
  const bindGroup = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
  });
  const failed = await device.popErrorScope();
  if (failed) {
    if (!pool) for (const b of buffers) b.destroy();
    return { name: k.name, error: failed.message };
  }
  try {
    const dispatch = [
      {
        name: k.name,
        pipeline,
        bindGroup,
        workgroups: [Math.min(k.workgroups, GRID_X), Math.ceil(k.workgroups / GRID_X), 1] as [number, number, number],
      },
    ];
    await runTimed(device, dispatch, ctx.timestamps, 1);
    const times: { ms: number; clock: 'gpu' | 'wall' }[] = [];
    for (let r = 0; r < reps; r++) times.push((await runTimed(device, dispatch, ctx.timestamps, repeat))[0]);
    times.sort((a, b) => a.ms - b.ms);
    const { ms, clock } = times[Math.floor(times.length / 2)];
    const rate = k.unit === 'barrier' ? ms / 1e3 / k.work : k.work / (ms / 1e3);
    return { name: k.name, unit: k.unit, rate, ms, clock };
  } finally {
    if (!pool) for (const b of buffers) b.destroy();
  }
}

export interface CeilingSuiteOptions {
  /** Shrinks every kernel for a software adapter (correctness, not speed). */
  small?: boolean;
  /** Every shape the adapter lists (adapter.info.subgroupMatrixConfigs), all types. */
  matrixShapes: MatrixShape[];
  reps?: number;
  /** Only the forward's no-HBM loop schedules and the storage copies (with the f16 register MMA row as the yardstick). */
  focus?: boolean;
  /** Only the storage study (ceiling-storage.ts). */
  storage?: boolean;
  /**
   * Only the second-pair probe: the copy on a first pair of 1 GiB buffers, then on a second pair
   * of `mib` MiB, then on the first again; `early`: the second pair is made (and filled) before
   * the first copy runs.
   */
  storageSecond?: { mib: number; early: boolean };
}

export interface CeilingSuite {
  rows: CeilingRow[];
  failures: CeilingFailure[];
}

const SOURCES: OperandSource[] = ['registers', 'workgroup-right', 'workgroup-right-col', 'workgroup-both', 'storage-right'];

/**
 * The whole suite: every matrix shape with operands in registers, and the first f16→f32 shape
 * with every operand source and 4 and 8 accumulators; then workgroup memory, storage copy,
 * barrier (with the barrier-free loop beside it, and the difference as a row) and exp2.
 */
export async function runCeilingSuite(
  ctx: WebGpuContext,
  o: CeilingSuiteOptions,
  log: (line: string) => void = () => {},
): Promise<CeilingSuite> {
  const rows: CeilingRow[] = [];
  const failures: CeilingFailure[] = [];
  const sg = ctx.subgroupMaxSize || 32;
  const wgs = o.small ? 8 : 2112;
  const reps = o.reps ?? (o.small ? 1 : 5);
  const add = (r: CeilingRow | CeilingFailure) => {
    if ('error' in r) failures.push(r);
    else rows.push(r);
    log('error' in r ? `${r.name}: FAILED ${r.error}` : `${r.name}: ${formatRate(r)} (${r.ms.toFixed(3)} ms, ${r.clock})`);
    return r;
  };
  const mmaOpts = { ...MMA_DEFAULTS, subgroupSize: sg, workgroups: wgs, iterations: o.small ? 4 : MMA_DEFAULTS.iterations };
  const f16 = o.matrixShapes.find(
    (m) => m.componentType === 'f16' && m.resultComponentType === 'f32' && m.M === 16 && m.N === 16 && m.K === 16,
  );
  if (o.storageSecond) {
    const base = storageStudySet()[0];
    const unit = o.small ? 1 << 10 : 1 << 20;
    const first = new Map<string, GPUBuffer>();
    const second = new Map<string, GPUBuffer>();
    const copy = (mib: number, pool: Map<string, GPUBuffer>, tag: string) => {
      const k = storageStudyKernel(mib * unit, base);
      return timeCeilingKernel(ctx, { ...k, name: `${k.name}, ${tag}` }, 'f32', reps, 4, pool);
    };
    const { mib, early } = o.storageSecond;
    if (early) {
      // the same buffers timeCeilingKernel would make, made now: destination, then the filled source
      const bytes = Math.ceil((mib * unit) / 16) * 16;
      for (const i of [0, 1]) {
        const b = ctx.device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
        if (i > 0) ctx.device.queue.writeBuffer(b, 0, new Float32Array(bytes / 4).fill(1));
        second.set(`${i}:${bytes}:false`, b);
      }
      await ctx.device.queue.onSubmittedWorkDone();
    }
    for (const tag of ['first pair', 'first pair again']) add(await copy(1024, first, tag));
    for (const tag of [`second pair${early ? ' (made before the first copy)' : ''}`, 'second pair again'])
      add(await copy(mib, second, tag));
    add(await copy(1024, first, 'first pair after the second'));
    for (const b of [...first.values(), ...second.values()]) b.destroy();
    return { rows, failures };
  }
  if (o.storage) {
    // One hypothesis at a time for the storage copy's gap to the decode kernel (ceiling-storage.ts).
    const set = storageStudySet();
    const gib = o.small ? 1 << 20 : 2 ** 30;
    // The first storage kernel of a process measured 4.1 TB/s and the same kernel after it 1.7:
    // the first kernel three times on the same buffers, then fresh buffers, then the whole set on kept ones.
    const pool = new Map<string, GPUBuffer>();
    const kept = async (st: (typeof set)[number], tag: string) => {
      const k = storageStudyKernel(gib, st);
      add(await timeCeilingKernel(ctx, { ...k, name: `${k.name}, buffers kept (${tag})` }, 'f32', reps, 4, pool));
    };
    for (const tag of ['1st', '2nd', '3rd']) await kept(set[0], tag);
    add(await timeCeilingKernel(ctx, storageStudyKernel(gib, set[0]), 'f32', reps));
    for (const st of set.slice(1)) await kept(st, 'set');
    for (const b of pool.values()) b.destroy();
    return { rows, failures };
  }
  if (o.focus) {
    if (f16) add(await timeCeilingKernel(ctx, mmaKernel(f16, 'registers', mmaOpts), 'f16', reps));
    if (f16) for (const l of attentionLoopSet(sg, !!o.small)) add(await timeCeilingKernel(ctx, attentionLoopKernel(l), 'f16', reps));
    // The buffer size as well as the loads in flight: 1 GiB is the binding limit, the decode kernel reads 256 MiB.
    for (const size of [30, 28, 26]) {
      const bytes = o.small ? 1 << 20 : 2 ** size;
      for (const per of [1, 4]) add(await timeCeilingKernel(ctx, storageCopyKernel(bytes, per), 'f32', reps));
      for (const [wg, per] of [
        [528, 4],
        [2112, 4],
        [1056, 8],
      ])
        add(await timeCeilingKernel(ctx, storageCopyGridKernel(bytes, o.small ? 4 : wg, per), 'f32', reps));
      for (const per of [4, 16]) add(await timeCeilingKernel(ctx, storageReadKernel(bytes, per), 'f32', reps));
    }
    return { rows, failures };
  }
  for (const shape of o.matrixShapes) add(await timeCeilingKernel(ctx, mmaKernel(shape, 'registers', mmaOpts), shape.componentType, reps));
  if (f16) {
    for (const source of SOURCES.slice(1)) add(await timeCeilingKernel(ctx, mmaKernel(f16, source, mmaOpts), 'f16', reps));
    for (const source of SOURCES) {
      const k = mmaKernel(f16, source, { ...mmaOpts, accumulators: 4 });
      add(await timeCeilingKernel(ctx, { ...k, name: `${k.name}, 4 accumulators` }, 'f16', reps));
    }
  }
  const iters = o.small ? 8 : 4096;
  for (const chains of [1, 4]) add(await timeCeilingKernel(ctx, workgroupRoundTripKernel(wgs, iters, chains), 'f32', reps));
  for (const per of [1, 4, 16]) add(await timeCeilingKernel(ctx, storageCopyKernel(o.small ? 1 << 20 : 1 << 30, per), 'f32', reps));
  for (const per of [4, 16]) add(await timeCeilingKernel(ctx, storageReadKernel(o.small ? 1 << 20 : 1 << 30, per), 'f32', reps));
  // The matrix backward's dQ accumulator at B 4, H 16, N 4096, d 128: 32 Mi words.
  add(await timeCeilingKernel(ctx, atomicAddKernel(o.small ? 1 << 16 : 1 << 25, 16, o.small ? 64 : 65536), 'f32', reps));
  const withB = add(await timeCeilingKernel(ctx, barrierKernel(wgs, iters, true), 'f32', reps));
  const without = add(await timeCeilingKernel(ctx, barrierKernel(wgs, iters, false), 'f32', reps));
  if (!('error' in withB) && !('error' in without)) {
    const k = barrierKernel(wgs, iters, true);
    // Per barrier, the workgroups resident at once overlap theirs: the figure is time over all barriers executed.
    add({
      name: 'workgroupBarrier(), cost over the barrier-free loop',
      unit: 'barrier',
      rate: (withB.ms - without.ms) / 1e3 / k.work,
      ms: withB.ms - without.ms,
      clock: withB.clock,
    });
  }
  for (const chains of [4, 8]) add(await timeCeilingKernel(ctx, expKernel(wgs, iters, chains), 'f32', reps));
  return { rows, failures };
}

export function formatRate(r: Pick<CeilingRow, 'unit' | 'rate'>): string {
  if (r.unit === 'FLOP') return `${(r.rate / 1e12).toFixed(1)} TFLOP/s`;
  if (r.unit === 'byte') return `${(r.rate / 1e12).toFixed(2)} TB/s`;
  if (r.unit === 'exp') return `${(r.rate / 1e12).toFixed(2)} Texp/s`;
  if (r.unit === 'atomic') return `${(r.rate / 1e9).toFixed(1)} G atomic adds/s`;
  return `${(r.rate * 1e9).toFixed(3)} ns per workgroup barrier, GPU-wide`;
}
