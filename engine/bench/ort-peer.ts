// `npm run bench:webgpu -- --peers ort`: ONNX Runtime Web's WebGPU attention on the same Dawn
// device as our kernels. A one-node model per shape (onnx-model.ts): the com.microsoft
// MultiHeadAttention op for non-causal prefill, GroupQueryAttention for causal prefill (it is
// causal by definition) and for decoding (a KV cache of Nk rows, the new token's K/V written
// into its last row: past and present share one buffer, as ONNX Runtime GenAI binds them, so no
// cache copy is timed). Inputs are N(0, 1) values generated on the GPU; sampled output rows are
// checked against float64 recomputed from the inputs as stored. Times: wall clock around
// back-to-back session.run calls until the queue drains (ORT gives no per-kernel GPU times
// here), so they include ORT's host work per run; the table says so.
//
// Bench-only: the app never imports this file, so onnxruntime-web stays out of its bundle.
// FLASHSCOPE_ORT_DIR points at a folder holding ort-wasm-simd-threaded.asyncify.{mjs,wasm}
// (the carried copy on a GPU machine); by default node_modules/onnxruntime-web/dist.

import type { AttentionProblem } from '../core/problem.ts';
import { fillKernelWgsl } from '../webgpu/fill-kernel.ts';
import { halfToFloat } from '../webgpu/half.ts';
import type { WebGpuContext } from '../webgpu/device.ts';
import { referenceRow } from '../webgpu/row-check.ts';
import { ONNX_FLOAT, ONNX_FLOAT16, ONNX_INT32, oneNodeModel, type OnnxNode, type OnnxValue } from './onnx-model.ts';

export interface PeerShape {
  key: string;
  b: number;
  hq: number;
  hk: number;
  /** Query rows (1: decoding against a cache of nk rows). */
  nq: number;
  nk: number;
  d: number;
  causal: boolean;
}

export interface PeerResult {
  ms: number;
  spread: string;
  /** Max |ORT − float64| over sampled rows of O. */
  err: number;
  op: string;
}

type Ort = typeof import('onnxruntime-web');

async function loadOrt(): Promise<Ort> {
  const ort = (await import('onnxruntime-web/webgpu')) as unknown as Ort;
  const dir = process.env.FLASHSCOPE_ORT_DIR ?? new URL('../../node_modules/onnxruntime-web/dist/', import.meta.url).pathname;
  ort.env.wasm.wasmPaths = {
    mjs: `${dir.replace(/\/$/, '')}/ort-wasm-simd-threaded.asyncify.mjs`,
    wasm: `${dir.replace(/\/$/, '')}/ort-wasm-simd-threaded.asyncify.wasm`,
  };
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  return ort;
}

interface Model {
  op: string;
  bytes: Uint8Array;
  /** GPU inputs by name: element count and values. */
  tensors: { name: string; dims: number[]; kind: 'q' | 'k' | 'v' | 'kcache' | 'vcache' }[];
  /** int32 inputs. */
  ints: { name: string; dims: number[]; values: number[] }[];
  /** Outputs bound to GPU buffers: name → the tensor (by `tensors` name) it shares, or its dims. */
  outputs: { name: string; dims: number[]; shares?: string }[];
}

/** The model and bindings for one shape. */
function modelFor(s: PeerShape, elem: number): Model {
  const { b, hq, hk, nq, nk, d } = s;
  const v = (name: string, shape: number[], type = elem): OnnxValue => ({ name, elemType: type, shape });
  if (nq > 1 && !s.causal) {
    if (hq !== hk) throw new Error('MultiHeadAttention takes no GQA');
    const node: OnnxNode = {
      opType: 'MultiHeadAttention',
      domain: 'com.microsoft',
      inputs: ['query', 'key', 'value'],
      outputs: ['output'],
      attributes: { num_heads: hq },
    };
    const io = [v('query', [b, nq, hq * d]), v('key', [b, nk, hk * d]), v('value', [b, nk, hk * d])];
    return {
      op: 'MultiHeadAttention',
      bytes: oneNodeModel(node, io, [v('output', [b, nq, hq * d])]),
      tensors: [
        { name: 'query', dims: [b, nq, hq * d], kind: 'q' },
        { name: 'key', dims: [b, nk, hk * d], kind: 'k' },
        { name: 'value', dims: [b, nk, hk * d], kind: 'v' },
      ],
      ints: [],
      outputs: [{ name: 'output', dims: [b, nq, hq * d] }],
    };
  }
  // GroupQueryAttention: prefill (nq = nk, no cache, causal) or one new token against a cache.
  const decode = nq === 1 && nk > 1;
  if (decode && s.causal) throw new Error('decoding rows are not causal here');
  const newRows = decode ? 1 : nq;
  const inputs = ['query', 'key', 'value', decode ? 'past_key' : '', decode ? 'past_value' : '', 'seqlens_k', 'total_sequence_length'];
  const node: OnnxNode = {
    opType: 'GroupQueryAttention',
    domain: 'com.microsoft',
    inputs,
    outputs: ['output', 'present_key', 'present_value'],
    attributes: { num_heads: hq, kv_num_heads: hk },
  };
  const ins = [v('query', [b, newRows, hq * d]), v('key', [b, newRows, hk * d]), v('value', [b, newRows, hk * d])];
  if (decode) ins.push(v('past_key', [b, hk, nk, d]), v('past_value', [b, hk, nk, d]));
  ins.push(v('seqlens_k', [b], ONNX_INT32), v('total_sequence_length', [], ONNX_INT32));
  const outs = [v('output', [b, newRows, hq * d]), v('present_key', [b, hk, nk, d]), v('present_value', [b, hk, nk, d])];
  return {
    op: 'GroupQueryAttention',
    bytes: oneNodeModel(node, ins, outs), // '' names the omitted optional inputs
    tensors: [
      { name: 'query', dims: [b, newRows, hq * d], kind: 'q' },
      { name: 'key', dims: [b, newRows, hk * d], kind: 'k' },
      { name: 'value', dims: [b, newRows, hk * d], kind: 'v' },
      ...(decode
        ? [
            { name: 'past_key', dims: [b, hk, nk, d], kind: 'kcache' as const },
            { name: 'past_value', dims: [b, hk, nk, d], kind: 'vcache' as const },
          ]
        : []),
    ],
    ints: [
      { name: 'seqlens_k', dims: [b], values: Array(b).fill(nk - 1) },
      { name: 'total_sequence_length', dims: [], values: [nk] },
    ],
    outputs: [
      { name: 'output', dims: [b, newRows, hq * d] },
      { name: 'present_key', dims: [b, hk, nk, d], shares: decode ? 'past_key' : undefined },
      { name: 'present_value', dims: [b, hk, nk, d], shares: decode ? 'past_value' : undefined },
    ],
  };
}

const count = (dims: number[]) => dims.reduce((a, x) => a * x, 1);

/** Runs every shape through ORT Web on ctx's device; f16 where the device has shader-f16, else f32. */
export async function runOrtPeer(
  ctx: WebGpuContext,
  shapes: PeerShape[],
  reps: number,
  log: (line: string) => void,
): Promise<Map<string, PeerResult | string>> {
  const out = new Map<string, PeerResult | string>();
  // ORT's wasm memory is a SharedArrayBuffer, whose views Dawn's Node bindings refuse in
  // writeBuffer ("Invalid argument"): copy those, for as long as ORT runs on this queue.
  const queue = ctx.device.queue as GPUQueue & { writeBuffer: GPUQueue['writeBuffer'] };
  const writeBuffer = queue.writeBuffer;
  queue.writeBuffer = ((buffer: GPUBuffer, offset: number, data: BufferSource, dataOffset = 0, size?: number) => {
    if (ArrayBuffer.isView(data) && data.buffer instanceof SharedArrayBuffer) {
      const per = (data as unknown as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1;
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      return writeBuffer.call(
        queue,
        buffer,
        offset,
        bytes.slice(dataOffset * per, size === undefined ? undefined : (dataOffset + size) * per),
      );
    }
    return writeBuffer.call(queue, buffer, offset, data, dataOffset, size);
  }) as GPUQueue['writeBuffer'];
  // ORT's waits on the GPU hold no Node handle: without one, Node exits with them pending.
  const keepAlive = setInterval(() => {}, 50);
  try {
    return await runShapes(ctx, shapes, reps, log, out);
  } finally {
    clearInterval(keepAlive);
    queue.writeBuffer = writeBuffer;
  }
}

async function runShapes(
  ctx: WebGpuContext,
  shapes: PeerShape[],
  reps: number,
  log: (line: string) => void,
  out: Map<string, PeerResult | string>,
): Promise<Map<string, PeerResult | string>> {
  let ort: Ort;
  try {
    if (typeof navigator === 'undefined' || !(navigator as Navigator & { gpu?: GPU }).gpu)
      Object.defineProperty(globalThis, 'navigator', { value: { gpu: ctx.gpu }, configurable: true });
    ort = await loadOrt();
  } catch (e) {
    for (const s of shapes) out.set(s.key, `onnxruntime-web did not load: ${e instanceof Error ? e.message : String(e)}`);
    return out;
  }
  const f16 = ctx.features.includes('shader-f16');
  const elem = f16 ? ONNX_FLOAT16 : ONNX_FLOAT;
  const eb = f16 ? 2 : 4;
  const { device } = ctx;
  const fill = device.createComputePipeline({
    layout: 'auto',
    compute: { module: device.createShaderModule({ code: fillKernelWgsl(f16 ? 'f16' : 'f32') }), entryPoint: 'main' },
  });
  log(
    `onnxruntime-web ${ort.env.versions.web}, WebGPU execution provider on this device, ${f16 ? 'fp16' : 'fp32 (no shader-f16)'} tensors`,
  );
  for (const s of shapes) {
    const buffers: GPUBuffer[] = [];
    let session: import('onnxruntime-web').InferenceSession | undefined;
    try {
      const m = modelFor(s, elem);
      session = await ort.InferenceSession.create(m.bytes, {
        executionProviders: [{ name: 'webgpu', device } as unknown as string],
        graphOptimizationLevel: 'disabled',
      });
      const gpu = new Map<string, GPUBuffer>();
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
      const enc = device.createCommandEncoder();
      m.tensors.forEach((t, stream) => {
        const n = count(t.dims);
        const buf = device.createBuffer({ size: Math.ceil((n * eb) / 16) * 16, usage });
        buffers.push(buf);
        gpu.set(t.name, buf);
        const u = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
        buffers.push(u);
        const groups = Math.ceil(n / 256);
        const x = Math.min(groups, ctx.limits.maxWorkgroupsPerDim);
        device.queue.writeBuffer(u, 0, new Uint32Array([n, (77 * 7919 + (stream + 1) * 104729) >>> 0, x * 256, 0]));
        const pass = enc.beginComputePass();
        pass.setPipeline(fill);
        pass.setBindGroup(
          0,
          device.createBindGroup({
            layout: fill.getBindGroupLayout(0),
            entries: [
              { binding: 0, resource: { buffer: u } },
              { binding: 1, resource: { buffer: buf } },
            ],
          }),
        );
        pass.dispatchWorkgroups(x, Math.ceil(groups / x), 1);
        pass.end();
      });
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      const type = (f16 ? 'float16' : 'float32') as 'float32';
      const feeds: Record<string, import('onnxruntime-web').Tensor> = {};
      for (const t of m.tensors) feeds[t.name] = ort.Tensor.fromGpuBuffer(gpu.get(t.name)!, { dataType: type, dims: t.dims });
      for (const t of m.ints) feeds[t.name] = new ort.Tensor('int32', Int32Array.from(t.values), t.dims);
      const fetches: Record<string, import('onnxruntime-web').Tensor> = {};
      for (const o of m.outputs) {
        let buf = o.shares ? gpu.get(o.shares) : undefined;
        if (!buf) {
          buf = device.createBuffer({ size: Math.ceil((count(o.dims) * eb) / 16) * 16, usage });
          buffers.push(buf);
          gpu.set(o.name, buf);
        }
        fetches[o.name] = ort.Tensor.fromGpuBuffer(buf, { dataType: type, dims: o.dims });
      }
      const run = async () => {
        await session!.run(feeds, fetches);
      };
      // Warm-up (shader compilation, clocks), then reps × back-to-back batches of ~20 ms.
      const t0 = performance.now();
      let one = Infinity;
      for (let i = 0; i < 3 || performance.now() - t0 < 400; i++) {
        const a = performance.now();
        await run();
        await device.queue.onSubmittedWorkDone();
        one = Math.min(one, performance.now() - a);
      }
      const batch = Math.max(1, Math.min(64, Math.ceil(20 / one)));
      const times: number[] = [];
      for (let r = 0; r < reps; r++) {
        const a = performance.now();
        for (let i = 0; i < batch; i++) await run();
        await device.queue.onSubmittedWorkDone();
        times.push((performance.now() - a) / batch);
      }
      times.sort((x, y) => x - y);
      const err = await checkRows(ctx, s, m, gpu, eb);
      const r: PeerResult = {
        ms: times[Math.floor(times.length / 2)],
        spread: `${times[0].toFixed(3)}–${times[times.length - 1].toFixed(3)} ms, ${batch} back to back`,
        err,
        op: m.op,
      };
      out.set(s.key, r);
      log(`  ORT ${m.op.padEnd(20)} ${s.key.padEnd(28)} ${r.ms.toFixed(3).padStart(9)} ms (${r.spread})  maxerr ${err.toExponential(1)}`);
    } catch (e) {
      const msg = e instanceof Error ? e.message.split('\n')[0].slice(0, 400) : String(e);
      out.set(s.key, msg);
      log(`  ORT ${s.key}: FAILED ${msg}`);
    } finally {
      await session?.release();
      for (const b of buffers) b.destroy();
    }
  }
  return out;
}

async function read(device: GPUDevice, src: GPUBuffer, firstElem: number, n: number, eb: number): Promise<Float32Array> {
  const start = firstElem * eb;
  const aligned = start - (start % 4);
  const size = Math.ceil((start - aligned + n * eb) / 4) * 4;
  const rb = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, aligned, rb, 0, size);
  device.queue.submit([enc.finish()]);
  await rb.mapAsync(GPUMapMode.READ);
  const raw = rb.getMappedRange().slice(0);
  rb.unmap();
  rb.destroy();
  const skip = (start - aligned) / eb;
  if (eb === 4) return new Float32Array(raw, skip * 4, n).slice();
  return Float32Array.from(new Uint16Array(raw, skip * 2, n), halfToFloat);
}

/** Max |ORT − float64| over three sampled (batch, head, row) sites; the reference is recomputed from the inputs as stored. */
async function checkRows(ctx: WebGpuContext, s: PeerShape, m: Model, gpu: Map<string, GPUBuffer>, eb: number): Promise<number> {
  const { b: B, hq, hk, nq, nk, d } = s;
  const decode = m.tensors.some((t) => t.kind === 'kcache');
  const p: AttentionProblem = { batch: B, hq, hk, nq, nk, d, dv: d, causal: s.causal, dtype: eb === 2 ? 'fp16' : 'fp32' };
  let err = 0;
  for (const [b, h, i] of [
    [0, 0, 0],
    [B - 1, hq - 1, nq - 1],
    [Math.floor(B / 2), Math.floor(hq / 2), Math.floor(nq / 3)],
  ]) {
    const kh = Math.floor(h / (hq / hk));
    const rowsNew = decode ? 1 : nq;
    const q = await read(ctx.device, gpu.get('query')!, ((b * rowsNew + i) * hq + h) * d, d, eb);
    let k: Float32Array;
    let v: Float32Array;
    if (decode) {
      // The cache after the run: its last row is the new token's K/V, written by the op.
      k = await read(ctx.device, gpu.get('past_key')!, (b * hk + kh) * nk * d, nk * d, eb);
      v = await read(ctx.device, gpu.get('past_value')!, (b * hk + kh) * nk * d, nk * d, eb);
      const kNew = await read(ctx.device, gpu.get('key')!, (b * hk + kh) * d, d, eb);
      const vNew = await read(ctx.device, gpu.get('value')!, (b * hk + kh) * d, d, eb);
      k.set(kNew, (nk - 1) * d);
      v.set(vNew, (nk - 1) * d);
    } else {
      // [B, N, H·d] rows: gather head kh's d columns of every key.
      const kAll = await read(ctx.device, gpu.get('key')!, b * nk * hk * d, nk * hk * d, eb);
      const vAll = await read(ctx.device, gpu.get('value')!, b * nk * hk * d, nk * hk * d, eb);
      k = new Float32Array(nk * d);
      v = new Float32Array(nk * d);
      for (let j = 0; j < nk; j++) {
        k.set(kAll.subarray((j * hk + kh) * d, (j * hk + kh + 1) * d), j * d);
        v.set(vAll.subarray((j * hk + kh) * d, (j * hk + kh + 1) * d), j * d);
      }
    }
    const ref = referenceRow(decode ? { ...p, nq: 1 } : p, h, decode ? 0 : i, q, k, v);
    const o = await read(ctx.device, gpu.get('output')!, ((b * rowsNew + i) * hq + h) * d, d, eb);
    for (let c = 0; c < d; c++) err = Math.max(err, Math.abs(o[c] - ref.o[c]));
  }
  return Number.isNaN(err) ? Infinity : err;
}
