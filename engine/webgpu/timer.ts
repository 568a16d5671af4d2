// Per-kernel GPU time: one compute pass per dispatch, each with begin/end timestamp writes
// when the adapter has 'timestamp-query'; otherwise the wall clock around the whole queue
// submission (reported as such — it includes launch and synchronization overhead).
//
// `repeat` encodes the whole dispatch list that many times into one submission and reports
// the mean per repetition. A kernel of a fraction of a millisecond submitted alone leaves the
// GPU idle while the host waits, maps the timestamps and submits again; back to back, the GPU
// stays busy, as it does under the CUDA events the anchor is timed with. (In one H200 run the
// same decoding kernel submitted alone measured 0.22 to 0.64 ms; in the next both ways agreed
// within 3%, so that scatter had another cause: BENCHMARKS.md, "WebGPU against CUDA on the H200".)

export interface KernelTime {
  name: string;
  ms: number;
  clock: 'gpu' | 'wall';
}

export interface Dispatch {
  name: string;
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  workgroups: [number, number, number];
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** WebGPU's cap on queries in one query set. */
const MAX_QUERIES = 4096;

export async function runTimed(device: GPUDevice, dispatches: Dispatch[], timestamps: boolean, repeat = 1): Promise<KernelTime[]> {
  const reps = Math.max(1, Math.min(Math.floor(repeat), Math.floor(MAX_QUERIES / (2 * dispatches.length))));
  const n = dispatches.length * reps;
  const querySet = timestamps ? device.createQuerySet({ type: 'timestamp', count: 2 * n }) : undefined;
  const resolve = querySet
    ? device.createBuffer({ size: 16 * n, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC })
    : undefined;
  const readback = querySet ? device.createBuffer({ size: 16 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }) : undefined;
  const enc = device.createCommandEncoder();
  const all = Array.from({ length: reps }, () => dispatches).flat();
  all.forEach((d, i) => {
    const pass = enc.beginComputePass(
      querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } } : {},
    );
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, d.bindGroup);
    pass.dispatchWorkgroups(...d.workgroups);
    pass.end();
  });
  if (querySet && resolve && readback) {
    enc.resolveQuerySet(querySet, 0, 2 * n, resolve, 0);
    enc.copyBufferToBuffer(resolve, 0, readback, 0, 16 * n);
  }
  const t0 = now();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  const wall = now() - t0;
  if (!querySet || !readback) return [{ name: 'all kernels', ms: wall / reps, clock: 'wall' }];
  await readback.mapAsync(GPUMapMode.READ);
  const ts = new BigUint64Array(readback.getMappedRange().slice(0));
  readback.unmap();
  readback.destroy();
  resolve?.destroy();
  querySet.destroy();
  const byName = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const ms = Number(ts[2 * i + 1] - ts[2 * i]) / 1e6;
    byName.set(all[i].name, (byName.get(all[i].name) ?? 0) + ms);
  }
  const out = [...byName].map(([name, ms]) => ({ name, ms: ms / reps, clock: 'gpu' as const }));
  // Timestamps of 0 or negative spans mean the implementation did not honour the writes.
  if (out.some((k) => !(k.ms > 0))) return [{ name: 'all kernels', ms: wall / reps, clock: 'wall' }];
  return out;
}
