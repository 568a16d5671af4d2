// safetensors files: an 8-byte little-endian header length, a JSON header mapping tensor
// names to {dtype, shape, data_offsets}, then the raw data. F16, BF16, F32 and F64 are
// read; the header is bounded and validated field by field before anything is trusted.

import { TensorFileError, type ByteSource } from './byte-source.ts';
import { storedBytes, type StoredFloat } from './float-codec.ts';
import { elementCount, readElements, type Tensor, type TensorInfo } from './tensor-info.ts';

const MAX_HEADER = 100 << 20; // the format's own limit is 100 MB
const DTYPES: Record<string, StoredFloat> = {
  F16: 'float16',
  BF16: 'bfloat16',
  F32: 'float32',
  F64: 'float64',
  I32: 'int32',
  I64: 'int64',
};

/** Every tensor the header lists (the __metadata__ entry excluded), in file order of their data. */
export async function readSafetensorsInfo(src: ByteSource): Promise<TensorInfo[]> {
  const name = src.name ?? 'safetensors file';
  if (src.size < 8) throw new TensorFileError(`${name}: only ${src.size} bytes, too short for a safetensors header (truncated?)`);
  const lenBytes = await src.read(0, 8);
  const view = new DataView(lenBytes.buffer, lenBytes.byteOffset, 8);
  const len = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
  if (len > MAX_HEADER)
    throw new TensorFileError(`${name}: header length ${len} is larger than the format allows (not a safetensors file?)`);
  if (8 + len > src.size)
    throw new TensorFileError(`${name}: header claims ${len} bytes but the file has ${src.size - 8} after the length (truncated)`);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(await src.read(8, len)));
  } catch (e) {
    throw new TensorFileError(`${name}: header is not valid UTF-8 JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    throw new TensorFileError(`${name}: header is not a JSON object`);
  const dataStart = 8 + len;
  const dataSize = src.size - dataStart;
  const out: TensorInfo[] = [];
  for (const [key, entry] of Object.entries(header as Record<string, unknown>)) {
    if (key === '__metadata__') continue;
    const where = `${name}: tensor '${key}'`;
    if (typeof entry !== 'object' || entry === null) throw new TensorFileError(`${where}: entry is not an object`);
    const { dtype, shape, data_offsets: offs } = entry as Record<string, unknown>;
    if (typeof dtype !== 'string') throw new TensorFileError(`${where}: missing dtype`);
    const stored = Object.hasOwn(DTYPES, dtype) ? DTYPES[dtype] : undefined;
    if (!stored) throw new TensorFileError(`${where}: dtype ${dtype} is not supported (F16, BF16, F32, F64, I32, I64 are)`);
    if (!Array.isArray(shape) || shape.length > 32 || !shape.every((s) => Number.isSafeInteger(s) && s >= 0)) {
      throw new TensorFileError(`${where}: bad shape ${JSON.stringify(shape)}`);
    }
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => Number.isSafeInteger(o) && o >= 0) || offs[0] > offs[1]) {
      throw new TensorFileError(`${where}: bad data_offsets ${JSON.stringify(offs)}`);
    }
    const byteLength = elementCount(shape as number[]) * storedBytes(stored);
    if (offs[1] - offs[0] !== byteLength) {
      throw new TensorFileError(
        `${where}: shape [${shape.join(', ')}] of ${dtype} needs ${byteLength} bytes, data_offsets span ${offs[1] - offs[0]}`,
      );
    }
    if (offs[1] > dataSize)
      throw new TensorFileError(`${where}: data ends at ${offs[1]} but the file holds ${dataSize} bytes of data (truncated)`);
    out.push({ name: key, dtype: stored, shape: shape as number[], dataOffset: dataStart + offs[0], byteLength });
  }
  out.sort((a, b) => a.dataOffset - b.dataOffset);
  // Tensors own disjoint bytes (the format's rule): an overlap means a corrupt or crafted header.
  const range = (t: TensorInfo) => `[${t.dataOffset - dataStart}, ${t.dataOffset - dataStart + t.byteLength})`;
  let last: TensorInfo | undefined;
  for (const t of out) {
    if (t.byteLength === 0) continue;
    if (last && t.dataOffset < last.dataOffset + last.byteLength)
      throw new TensorFileError(`${name}: tensors '${last.name}' ${range(last)} and '${t.name}' ${range(t)} overlap in data_offsets`);
    if (!last || t.dataOffset + t.byteLength > last.dataOffset + last.byteLength) last = t;
  }
  return out;
}

/** Reads one tensor by name, or the only tensor when the file holds exactly one; `admit` may refuse it from its header before its data is read. */
export async function readSafetensor(src: ByteSource, tensorName?: string, admit?: (info: TensorInfo) => void): Promise<Tensor> {
  const all = await readSafetensorsInfo(src);
  const names = all.map((t) => t.name).join(', ') || '(none)';
  let info: TensorInfo | undefined;
  if (tensorName !== undefined) {
    info = all.find((t) => t.name === tensorName);
    if (!info) throw new TensorFileError(`${src.name ?? 'safetensors file'}: no tensor '${tensorName}'; it holds: ${names}`);
  } else {
    if (all.length !== 1)
      throw new TensorFileError(
        `${src.name ?? 'safetensors file'}: holds ${all.length} tensors (${names}); name one as file.safetensors:NAME`,
      );
    info = all[0];
  }
  admit?.(info);
  return { info, data: await readElements(src, info) };
}
