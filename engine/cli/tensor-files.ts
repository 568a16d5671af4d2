// Loading the CLI's tensor arguments: `x.npy`, `x.safetensors` (one tensor) or
// `x.safetensors:NAME`, always through a file ByteSource.

import { TensorFileError } from '../io/byte-source.ts';
import { integerValuesMessage, isIntegerStorage } from '../io/float-codec.ts';
import { withFileSource } from '../io/node-file-source.ts';
import { readNpy } from '../io/npy.ts';
import { readSafetensor } from '../io/safetensors.ts';
import { elementCount, type Tensor, type TensorInfo } from '../io/tensor-info.ts';
import { formatBytes } from '../core/size-model.ts';
import { checkInputPath } from './output-files.ts';
import { DEFAULT_RUN_MAX_BYTES } from './size-limits.ts';

/** The memory reading a tensor takes: its stored bytes and the decoded array (float64 for float64 and integer files). */
export function tensorReadBytes(info: TensorInfo): number {
  const wide = info.dtype === 'float64' || info.dtype === 'int32' || info.dtype === 'int64';
  return info.byteLength + elementCount(info.shape) * (wide ? 8 : 4);
}

/**
 * Refuses, from its header alone, a tensor whose reading would take more than one run may hold:
 * `maxBytes` is run's --max-bytes when given (absent: the default run budget).
 */
function admitTensor(spec: string, maxBytes: number | undefined): (info: TensorInfo) => void {
  const limit = maxBytes ?? DEFAULT_RUN_MAX_BYTES;
  return (info) => {
    const needed = tensorReadBytes(info);
    if (needed <= limit) return;
    throw new TensorFileError(
      `${spec}: its header declares a ${info.dtype} tensor of shape [${info.shape.join(', ')}], which would need about ` +
        `${formatBytes(needed)} to read, over the limit of ${formatBytes(limit)} for one run; use a smaller tensor` +
        (maxBytes === undefined ? ' (run raises the limit with --max-bytes)' : ' or raise --max-bytes'),
    );
  };
}

/**
 * Loads one tensor. Integer files (int32/int64) are accepted only where `indices` says so:
 * offsets, block tables and cache lengths, never attention values. `maxBytes`: run's --max-bytes.
 */
export async function loadTensorFile(spec: string, opts: { indices?: boolean; maxBytes?: number } = {}): Promise<Tensor> {
  const t = await loadAnyTensor(spec, opts.maxBytes);
  if (!opts.indices && isIntegerStorage(t.info.dtype)) {
    throw new TensorFileError(integerValuesMessage(spec, t.info.dtype));
  }
  return t;
}

async function loadAnyTensor(spec: string, maxBytes: number | undefined): Promise<Tensor> {
  const m = /^(.*\.safetensors)(?::(.+))?$/i.exec(spec);
  if (m) {
    checkInputPath('input', m[1]);
    return withFileSource(m[1], (src) => readSafetensor(src, m[2], admitTensor(spec, maxBytes)));
  }
  if (/\.npy$/i.test(spec)) {
    checkInputPath('input', spec);
    return withFileSource(spec, (src) => readNpy(src, admitTensor(spec, maxBytes)));
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
