// Per-kernel GPU time: one compute pass per dispatch, each with begin/end timestamp writes
// when the adapter has 'timestamp-query'; otherwise the wall clock around the whole queue
// submission (reported as such — it includes launch and synchronization overhead).

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

export async function runTimed(device: GPUDevice, dispatches: Dispatch[], timestamps: boolean): Promise<KernelTime[]> {
  const n = dispatches.length;
  const querySet = timestamps ? device.createQuerySet({ type: 'timestamp', count: 2 * n }) : undefined;
  const resolve = querySet
    ? device.createBuffer({ size: 16 * n, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC })
    : undefined;
  const readback = querySet ? device.createBuffer({ size: 16 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }) : undefined;
  const enc = device.createCommandEncoder();
  dispatches.forEach((d, i) => {
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
  if (!querySet || !readback) return [{ name: 'all kernels', ms: wall, clock: 'wall' }];
  await readback.mapAsync(GPUMapMode.READ);
  const ts = new BigUint64Array(readback.getMappedRange().slice(0));
  readback.unmap();
  readback.destroy();
  resolve?.destroy();
  querySet.destroy();
  const byName = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const ms = Number(ts[2 * i + 1] - ts[2 * i]) / 1e6;
    byName.set(dispatches[i].name, (byName.get(dispatches[i].name) ?? 0) + ms);
  }
  const out = [...byName].map(([name, ms]) => ({ name, ms, clock: 'gpu' as const }));
  // Timestamps of 0 or negative spans mean the implementation did not honour the writes.
  if (out.some((k) => !(k.ms > 0))) return [{ name: 'all kernels', ms: wall, clock: 'wall' }];
  return out;
}
