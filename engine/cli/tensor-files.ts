// Loading the CLI's tensor arguments: `x.npy`, `x.safetensors` (one tensor) or
// `x.safetensors:NAME`, always through a file ByteSource.

import { TensorFileError } from '../io/byte-source.ts';
import { integerValuesMessage, isIntegerStorage } from '../io/float-codec.ts';
import { withFileSource } from '../io/node-file-source.ts';
import { readNpy } from '../io/npy.ts';
import { readSafetensor } from '../io/safetensors.ts';
import type { Tensor } from '../io/tensor-info.ts';
import { checkInputPath } from './output-files.ts';

/**
 * Loads one tensor. Integer files (int32/int64) are accepted only where `indices` says so:
 * offsets, block tables and cache lengths, never attention values.
 */
export async function loadTensorFile(spec: string, opts: { indices?: boolean } = {}): Promise<Tensor> {
  const t = await loadAnyTensor(spec);
  if (!opts.indices && isIntegerStorage(t.info.dtype)) {
    throw new TensorFileError(integerValuesMessage(spec, t.info.dtype));
  }
  return t;
}

async function loadAnyTensor(spec: string): Promise<Tensor> {
  const m = /^(.*\.safetensors)(?::(.+))?$/i.exec(spec);
  if (m) {
    checkInputPath('input', m[1]);
    return withFileSource(m[1], (src) => readSafetensor(src, m[2]));
  }
  if (/\.npy$/i.test(spec)) {
    checkInputPath('input', spec);
    return withFileSource(spec, readNpy);
  }
  throw new TensorFileError(`${spec}: unknown tensor file type (expected .npy or .safetensors[:NAME])`);
}

/** A 1-D tensor of exactly `n` values (per-head sinks or ALiBi slopes). */
export async function loadVector(spec: string, n: number, what: string): Promise<number[]> {
  const t = await loadTensorFile(spec);
  if (t.info.shape.length !== 1 || t.info.shape[0] !== n) {
    throw new TensorFileError(
      `${what} (${spec}): expected a 1-D tensor of length ${n} (one per query head), got shape [${t.info.shape.join(', ')}]`,
    );
  }
  return Array.from(t.data);
}
