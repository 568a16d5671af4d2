// The CLI's tensor files are sized from their headers: a file whose header declares more than
// one run may hold is refused before its data is read. The files here are sparse: their
// declared gigabytes take no disk.

import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { encodeNpy } from '../io/npy.ts';
import { NodeFileSource } from '../io/node-file-source.ts';
import { loadTensorFile } from './tensor-files.ts';
import { DEFAULT_RUN_MAX_BYTES } from './size-limits.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-tensor-size-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

/** A .npy of `shape` float32 whose data is a hole: header written, length set by truncate. */
function sparseNpy(name: string, shape: number[]): string {
  const header = encodeNpy([], [0]);
  const text = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`.padEnd(117) + '\n';
  const out = new Uint8Array(10 + text.length);
  out.set(header.subarray(0, 8));
  out.set([text.length, 0], 8);
  out.set(new TextEncoder().encode(text), 10);
  const path = join(dir, name);
  writeFileSync(path, out);
  truncateSync(path, out.length + shape.reduce((a, b) => a * b, 1) * 4);
  return path;
}

/** A .safetensors with one float32 tensor of `shape` whose data is a hole. */
function sparseSafetensors(name: string, shape: number[]): string {
  const bytes = shape.reduce((a, b) => a * b, 1) * 4;
  const json = new TextEncoder().encode(JSON.stringify({ q: { dtype: 'F32', shape, data_offsets: [0, bytes] } }));
  const out = new Uint8Array(8 + json.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 8);
  const path = join(dir, name);
  writeFileSync(path, out);
  truncateSync(path, out.length + bytes);
  return path;
}

/** Records every read's length; a read of more than 1 MB is refused instead of allocated. */
function watchReads(): number[] {
  const lengths: number[] = [];
  const read = NodeFileSource.prototype.read;
  vi.spyOn(NodeFileSource.prototype, 'read').mockImplementation(function (this: NodeFileSource, offset: number, length: number) {
    lengths.push(length);
    if (length > 2 ** 20) return Promise.reject(new Error(`read ${length} bytes`));
    return read.call(this, offset, length);
  });
  return lengths;
}

// 2^30 float32 values: 4 GiB stored, 8 GiB with the decoded array, over the 4 GiB a run may hold.
const HUGE = [1, 16, 65_536, 1024];

describe('tensor files sized from their headers', () => {
  it.each([
    ['.npy', () => sparseNpy('huge.npy', HUGE)],
    ['.safetensors', () => sparseSafetensors('huge.safetensors', HUGE)],
  ])('a %s whose header declares more than a run may hold is refused before any data is read', async (_, make) => {
    const path = make();
    const reads = watchReads();
    await expect(loadTensorFile(path)).rejects.toThrow(
      /huge\.(npy|safetensors): its header declares a float32 tensor of shape \[1, 16, 65536, 1024\], which would need about 8\.00 GB to read, over the limit of 4\.00 GB/,
    );
    expect(Math.max(...reads)).toBeLessThanOrEqual(2 ** 20);
  });

  it('a tensor within the limit is read whole', async () => {
    const path = join(dir, 'small.npy');
    writeFileSync(path, encodeNpy([1, 2, 3, 4, 5, 6], [2, 3]));
    const t = await loadTensorFile(path);
    expect(Array.from(t.data)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('the limit sits where the run budget does: one value under it is admitted from the header', async () => {
    // Float32 stored and decoded: 8 bytes a value.
    const n = DEFAULT_RUN_MAX_BYTES / 8;
    const reads = watchReads();
    // Admitted, so the (refused-by-the-spy) data read is attempted: the header check let it through.
    await expect(loadTensorFile(sparseNpy('edge.npy', [n]))).rejects.toThrow(`read ${DEFAULT_RUN_MAX_BYTES / 2} bytes`);
    await expect(loadTensorFile(sparseNpy('over.npy', [n + 1]))).rejects.toThrow(/over the limit/);
    expect(reads.filter((r) => r > 2 ** 20)).toHaveLength(1);
  });

  it("run's --max-bytes moves the limit both ways, and the refusal names the option", async () => {
    const path = join(dir, 'ten.npy');
    writeFileSync(path, encodeNpy([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10]));
    // 10 float32 values: 40 bytes stored + 40 decoded.
    await expect(loadTensorFile(path, { maxBytes: 79 })).rejects.toThrow(
      /need about 80 bytes to read, over the limit of 79 bytes for one run; use a smaller tensor or raise --max-bytes/,
    );
    expect((await loadTensorFile(path, { maxBytes: 80 })).data.length).toBe(10);
    const reads = watchReads();
    // Raised past the default: the 8 GB header is admitted (the spy then refuses the data read).
    await expect(loadTensorFile(sparseNpy('raised.npy', HUGE), { maxBytes: 2 ** 34 })).rejects.toThrow(/^read \d+ bytes$/);
    expect(reads.some((r) => r > 2 ** 20)).toBe(true);
    await expect(loadTensorFile(sparseNpy('default.npy', HUGE))).rejects.toThrow(/run raises the limit with --max-bytes/);
  });
});
