// NumPy .npy files (format versions 1.0, 2.0, 3.0): float16/float32/float64 (and
// int32/int64 for offsets and block tables), little-endian, C order. Anything else is rejected with a message naming what the file
// holds. The header is parsed from a bounded read, so garbage can neither hang the
// parser nor make it allocate more than a few bytes.

import { TensorFileError, type ByteSource } from './byte-source.ts';
import { encodeFloats, storedBytes, type StoredFloat } from './float-codec.ts';
import { elementCount, readElements, type Tensor, type TensorInfo } from './tensor-info.ts';

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
/** Real headers are a few hundred bytes; anything larger is not a tensor we should parse. */
const MAX_HEADER = 1 << 20;
const MAX_RANK = 32;

const DESCR: Record<string, StoredFloat> = { '<f2': 'float16', '<f4': 'float32', '<f8': 'float64', '<i4': 'int32', '<i8': 'int64' };

function describeDescr(d: string): string {
  const kinds: Record<string, string> = {
    i: 'signed integer',
    u: 'unsigned integer',
    b: 'boolean',
    c: 'complex',
    f: 'float',
    V: 'raw bytes',
    S: 'byte string',
    U: 'unicode string',
    O: 'Python object',
    M: 'datetime',
    m: 'timedelta',
  };
  const m = /^([<>|=])([a-zA-Z])(\d*)$/.exec(d);
  if (!m) return `dtype '${d}'`;
  const [, order, kind, size] = m;
  const endian = order === '>' ? 'big-endian ' : '';
  return `${endian}${kinds[kind] ?? 'unknown'}${size ? ` (${size} bytes)` : ''} dtype '${d}'`;
}

// A tiny parser for the Python dict literal numpy writes: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
type PyValue = string | number | boolean | PyValue[] | { [k: string]: PyValue };

function parsePyLiteral(text: string, where: string): PyValue {
  let i = 0;
  const fail = (what: string): never => {
    throw new TensorFileError(`${where}: malformed header (${what} at character ${i}): ${JSON.stringify(text.slice(0, 120))}`);
  };
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const value = (depth: number): PyValue => {
    if (depth > 8) fail('nesting too deep');
    ws();
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      if (end < 0) fail('unterminated string');
      const s = text.slice(i + 1, end);
      i = end + 1;
      return s;
    }
    if (c === '{' || c === '(' || c === '[') {
      const close = c === '{' ? '}' : c === '(' ? ')' : ']';
      i++;
      const list: PyValue[] = [];
      // No prototype: a '__proto__' or 'constructor' key is an ordinary (unknown) key.
      const dict = Object.create(null) as Record<string, PyValue>;
      for (;;) {
        ws();
        if (text[i] === close) {
          i++;
          break;
        }
        if (i >= text.length) fail(`missing '${close}'`);
        const v = value(depth + 1);
        if (c === '{') {
          ws();
          if (text[i] !== ':') fail("expected ':'");
          i++;
          if (typeof v !== 'string') fail('dict key is not a string');
          dict[v as string] = value(depth + 1);
        } else list.push(v);
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== close) fail(`expected ',' or '${close}'`);
      }
      return c === '{' ? dict : list;
    }
    const word = /^(True|False|-?\d+L?)/.exec(text.slice(i, i + 24));
    if (!word) return fail('unexpected token');
    i += word[0].length;
    if (word[0] === 'True') return true;
    if (word[0] === 'False') return false;
    return Number(word[0].replace('L', ''));
  };
  const v = value(0);
  ws();
  if (i !== text.length) fail('trailing characters');
  return v;
}

/** Parses the header; validates dtype, order, shape and that the data is all there. */
export async function readNpyInfo(src: ByteSource): Promise<TensorInfo> {
  const name = src.name ?? 'npy file';
  if (src.size < 10) throw new TensorFileError(`${name}: only ${src.size} bytes, too short for a .npy header (truncated?)`);
  const pre = await src.read(0, Math.min(12, src.size));
  if (!MAGIC.every((b, k) => pre[k] === b)) {
    const seen = Array.from(pre.subarray(0, 6), (b) => b.toString(16).padStart(2, '0')).join(' ');
    throw new TensorFileError(`${name}: not a .npy file (wrong magic: found bytes ${seen}, expected 93 4e 55 4d 50 59)`);
  }
  const major = pre[6];
  let headerLen: number;
  let headerStart: number;
  if (major === 1) {
    headerLen = pre[8] | (pre[9] << 8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (src.size < 12) throw new TensorFileError(`${name}: truncated .npy header`);
    headerLen = (pre[8] | (pre[9] << 8) | (pre[10] << 16)) + pre[11] * 2 ** 24;
    headerStart = 12;
  } else {
    throw new TensorFileError(`${name}: unsupported .npy format version ${major}.${pre[7]} (1.0, 2.0 and 3.0 are known)`);
  }
  if (headerLen > MAX_HEADER) throw new TensorFileError(`${name}: .npy header claims ${headerLen} bytes, more than any real header`);
  if (headerStart + headerLen > src.size) {
    throw new TensorFileError(
      `${name}: .npy header claims ${headerLen} bytes but the file ends after ${src.size - headerStart} (truncated)`,
    );
  }
  const raw = await src.read(headerStart, headerLen);
  const text = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(raw).trim();
  const dict = parsePyLiteral(text, name);
  if (typeof dict !== 'object' || Array.isArray(dict))
    throw new TensorFileError(`${name}: .npy header is not a dict: ${text.slice(0, 80)}`);
  const { descr, fortran_order: fortran, shape } = dict as Record<string, PyValue>;
  if (typeof descr !== 'string') throw new TensorFileError(`${name}: .npy header has no 'descr' string (found ${JSON.stringify(descr)})`);
  const dtype = Object.hasOwn(DESCR, descr) ? DESCR[descr] : undefined;
  if (!dtype) {
    throw new TensorFileError(
      `${name}: ${describeDescr(descr)} is not supported; expected little-endian float16, float32, float64, int32 or int64 ('<f2', '<f4', '<f8', '<i4', '<i8')`,
    );
  }
  if (fortran !== false) {
    throw new TensorFileError(`${name}: Fortran-order (column-major) arrays are not supported; save with C order (np.ascontiguousarray)`);
  }
  if (!Array.isArray(shape) || shape.length > MAX_RANK || !shape.every((s) => typeof s === 'number' && Number.isSafeInteger(s) && s >= 0)) {
    throw new TensorFileError(`${name}: .npy header has a bad 'shape': ${JSON.stringify(shape)}`);
  }
  const dims = shape as number[];
  const byteLength = elementCount(dims) * storedBytes(dtype);
  const dataOffset = headerStart + headerLen;
  if (!Number.isSafeInteger(byteLength) || dataOffset + byteLength > src.size) {
    throw new TensorFileError(
      `${name}: shape [${dims.join(', ')}] of ${dtype} needs ${byteLength} bytes of data but the file holds ${src.size - dataOffset} (truncated)`,
    );
  }
  return { name, dtype, shape: dims, dataOffset, byteLength };
}

/** Reads the whole tensor; `admit` sees the header's shape and dtype first and may refuse before any data is read. */
export async function readNpy(src: ByteSource, admit?: (info: TensorInfo) => void): Promise<Tensor> {
  const info = await readNpyInfo(src);
  admit?.(info);
  return { info, data: await readElements(src, info) };
}

/** A version 1.0 .npy file (C order, little-endian), header padded to 64 bytes as numpy does. */
export function encodeNpy(
  values: ArrayLike<number>,
  shape: readonly number[],
  dtype: 'float16' | 'float32' | 'float64' | 'int32' = 'float32',
): Uint8Array<ArrayBuffer> {
  if (elementCount(shape) !== values.length) {
    throw new TensorFileError(`npy write: shape [${shape.join(', ')}] holds ${elementCount(shape)} elements, got ${values.length}`);
  }
  const descr = { float16: '<f2', float32: '<f4', float64: '<f8', int32: '<i4' }[dtype];
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  const unpadded = 10 + header.length + 1;
  header += ' '.repeat((64 - (unpadded % 64)) % 64) + '\n';
  const data = encodeFloats(values, dtype);
  const out = new Uint8Array(10 + header.length + data.length);
  out.set(MAGIC, 0);
  out[6] = 1;
  out[7] = 0;
  out[8] = header.length & 0xff;
  out[9] = header.length >> 8;
  for (let k = 0; k < header.length; k++) out[10 + k] = header.charCodeAt(k);
  out.set(data, 10 + header.length);
  return out;
}
