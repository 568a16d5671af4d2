// What every WebGPU run holds and does the same way: its buffers and dispatches, running the
// dispatches under a validation scope with their GPU times, reading a buffer range back, and
// freeing its buffers. The dense forward (backend.ts) and the serving layouts (serving-runs.ts)
// build on it.

import type { WebGpuContext } from './device.ts';
import { runTimed, type Dispatch, type KernelTime } from './timer.ts';

/** A failure the person can act on: the message says what to change. */
export class WebGpuRunError extends Error {
  override name = 'WebGpuRunError';
}

export abstract class GpuRun {
  protected buffers: GPUBuffer[] = [];
  protected dispatches: Dispatch[] = [];
  /** Human-readable kernel configuration (tile sizes, workgroup memory). */
  config = '';

  protected constructor(readonly ctx: WebGpuContext) {}

  /** Runs the kernels (`repeat` times back to back in one submission: timer.ts) and returns their mean GPU times. */
  async execute(repeat = 1): Promise<KernelTime[]> {
    if (this.ctx.lost) throw new WebGpuRunError(this.ctx.lost);
    const { device } = this.ctx;
    device.pushErrorScope('validation');
    const times = await runTimed(device, this.dispatches, this.ctx.timestamps, repeat);
    const err = await device.popErrorScope();
    if (err) throw new WebGpuRunError(`kernel launch failed: ${err.message}`);
    if (this.ctx.lost) throw new WebGpuRunError(this.ctx.lost);
    return times;
  }

  /** `bytes` bytes of a buffer from byte `offset` (a multiple of 4). */
  protected async readBuffer(src: GPUBuffer, offset: number, bytes: number): Promise<ArrayBuffer> {
    const { device } = this.ctx;
    const size = Math.ceil(bytes / 4) * 4;
    const rb = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(src, offset, rb, 0, size);
    device.queue.submit([enc.finish()]);
    await rb.mapAsync(GPUMapMode.READ);
    const out = rb.getMappedRange().slice(0, bytes);
    rb.unmap();
    rb.destroy();
    if (this.ctx.lost) throw new WebGpuRunError(this.ctx.lost);
    return out;
  }

  destroy(): void {
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
  }
}
