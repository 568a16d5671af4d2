// The WGSL microbenchmarks of `npm run bench:webgpu -- --ceiling`: what one device does through
// WebGPU on the operations the attention kernels are made of, each kernel alone, so that a
// kernel's time can be set against the ceiling of the resource it spends most of.
// Each kernel keeps its work live by storing a result the host never reads (a store is a side
// effect no compiler may drop); `work` says how much one dispatch does, in the unit of `unit`.

/** A subgroup-matrix shape and type, as the adapter lists it (adapter.info.subgroupMatrixConfigs). */
export interface MatrixShape {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/** Where an MMA's operands come from on every multiply-accumulate. */
export type OperandSource = 'registers' | 'workgroup-right' | 'workgroup-right-col' | 'workgroup-both' | 'storage-right';

export interface CeilingKernel {
  /** Row label, e.g. "MMA f16×16×16→f32, registers". */
  name: string;
  /** What `work` counts: the ceiling is work per second in this unit. */
  unit: 'FLOP' | 'byte' | 'exp' | 'barrier' | 'atomic';
  wgsl: string;
  /** Workgroups: in x up to GRID_X, then rows of GRID_X in y (a count past GRID_X must be a multiple of it). */
  workgroups: number;
  /** Work one dispatch does. */
  work: number;
  /** Bytes of each storage binding: 0 is the output, then the inputs. */
  buffers: number[];
  /** Buffers with every usage a storage buffer may carry (COPY_SRC, VERTEX, INDEX, INDIRECT, UNIFORM is not allowed beside it). */
  allUsages?: boolean;
  /** Inputs filled through mappedAtCreation rather than queue.writeBuffer. */
  mapped?: boolean;
}

/** WGSL's scalar for a matrix component type; 8-bit types are read packed, four to a 32-bit word. */
function storageScalar(t: string): { scalar: string; perWord: number } {
  if (t === 'i8') return { scalar: 'i32', perWord: 4 };
  if (t === 'u8') return { scalar: 'u32', perWord: 4 };
  return { scalar: t, perWord: 1 };
}

const enables = (types: string[]) =>
  `${types.includes('f16') ? 'enable f16;\n' : ''}enable subgroups;\nenable chromium_experimental_subgroup_matrix;\nrequires subgroup_id, subgroup_uniformity;`;

export interface MmaOptions {
  /** Subgroups per workgroup. */
  subgroups: number;
  subgroupSize: number;
  workgroups: number;
  /** Independent accumulators per subgroup: enough to hide the MMA latency. */
  accumulators: number;
  iterations: number;
}

export const MMA_DEFAULTS: Omit<MmaOptions, 'subgroupSize'> = { subgroups: 8, workgroups: 2112, accumulators: 8, iterations: 256 };

/**
 * Multiply-accumulate throughput of one shape with operands from `source`: 'registers' loads A
 * and B once; 'workgroup-right' loads B from workgroup memory before every MMA (as Q·Kᵀ reads
 * K), 'workgroup-both' loads A and B (as P·V reads P and V), 'storage-right' loads B from a
 * storage buffer small enough to stay in cache (as a kernel that skips staging would).
 */
export function mmaKernel(shape: MatrixShape, source: OperandSource, o: MmaOptions): CeilingKernel {
  const { M, N, K } = shape;
  const a = storageScalar(shape.componentType);
  const r = storageScalar(shape.resultComponentType);
  const left = `subgroup_matrix_left<${shape.componentType}, ${K}, ${M}>`;
  const right = `subgroup_matrix_right<${shape.componentType}, ${N}, ${K}>`;
  const result = `subgroup_matrix_result<${shape.resultComponentType}, ${N}, ${M}>`;
  // Operand tiles: 8 of A (M×K) and 8 of B (K×N) side by side, so consecutive loads differ.
  const tiles = 16;
  const aWords = (tiles * M * K) / a.perWord;
  const bWords = (tiles * K * N) / a.perWord;
  const threads = o.subgroups * o.subgroupSize;
  const loadA = (t: string) => `subgroupMatrixLoad<${left}, row_major>(&wa, ${t} * ${(M * K) / a.perWord}u, ${K}u)`;
  const major = source === 'workgroup-right-col' ? 'col_major' : 'row_major';
  const loadB = (arr: string, t: string) =>
    `subgroupMatrixLoad<${right}, ${major}>(&${arr}, ${t} * ${(K * N) / a.perWord}u, ${major === 'col_major' ? K : N}u)`;
  const accs = Array.from({ length: o.accumulators }, (_, i) => i);
  const step = accs
    .map((i) => {
      // The start comes from the host (0) through workgroup memory: the compiler cannot see which
      // tile a load reads, so it cannot keep the tiles in registers across iterations.
      const t = `((it * ${o.accumulators}u + ${i}u + off) % ${tiles}u)`;
      const aOp = source === 'workgroup-both' ? loadA(t) : 'am';
      const bOp = source === 'registers' ? 'bm' : loadB(source === 'storage-right' ? 'sb' : 'wb', t);
      return `    acc${i} = subgroupMatrixMultiplyAccumulate(${aOp}, ${bOp}, acc${i});`;
    })
    .join('\n');
  const wgsl = `${enables([shape.componentType, shape.resultComponentType])}
@group(0) @binding(0) var<storage, read_write> out: array<${r.scalar}>;
@group(0) @binding(1) var<storage, read> src: array<${a.scalar}>;
var<workgroup> wa: array<${a.scalar}, ${aWords}>;
var<workgroup> wb: array<${a.scalar}, ${bWords}>;
var<workgroup> woff: u32;
${source === 'storage-right' ? `@group(0) @binding(2) var<storage, read> sb: array<${a.scalar}>;` : ''}
@compute @workgroup_size(${threads})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sg: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  for (var i = lid; i < ${aWords}u; i += ${threads}u) { wa[i] = src[i]; }
  for (var i = lid; i < ${bWords}u; i += ${threads}u) { wb[i] = src[${aWords}u + i]; }
  if (lid == 0u) { woff = u32(src[0] == ${a.scalar}(3)); }
  // workgroupUniformLoad is also the barrier after the operand stores.
  let off = workgroupUniformLoad(&woff);
  let am = ${loadA('0u')};
  let bm = ${loadB('wb', '0u')};
${accs.map((i) => `  var acc${i} = ${result}();`).join('\n')}
  for (var it = 0u; it < ${o.iterations}u; it++) {
${step}
  }
  let base = (wid.x * ${o.subgroups}u + sg) * ${M * N}u;
${accs.map((i) => `  subgroupMatrixStore<row_major>(&out, base, acc${i}, ${N}u);`).join('\n')}
}`;
  const resElem = { f16: 2, f32: 4, i32: 4, u32: 4 }[shape.resultComponentType] ?? 4;
  const srcBytes = (aWords + bWords) * 4;
  return {
    name: `MMA ${shape.componentType} ${M}×${N}×${K}→${shape.resultComponentType}, ${SOURCE_LABEL[source]}`,
    unit: 'FLOP',
    wgsl,
    workgroups: o.workgroups,
    work: 2 * M * N * K * o.accumulators * o.iterations * o.subgroups * o.workgroups,
    buffers: [o.workgroups * o.subgroups * M * N * resElem, srcBytes, ...(source === 'storage-right' ? [bWords * 4] : [])],
  };
}

export const SOURCE_LABEL: Record<OperandSource, string> = {
  registers: 'operands in registers',
  'workgroup-right': 'B from workgroup memory each MMA',
  'workgroup-right-col': 'B from workgroup memory each MMA, column-major (as Q·Kᵀ loads K)',
  'workgroup-both': 'A and B from workgroup memory each MMA',
  'storage-right': 'B from storage (cached) each MMA',
};

/** Workgroups per row of a dispatch that needs more than one row (WebGPU allows 65535 per dimension). */
export const GRID_X = 32768;

/** Plain-thread kernels run 256 threads a workgroup, 8 workgroups per SM's worth of a large GPU. */
const THREADS = 256;

/**
 * Workgroup-memory round trip as the softmax reads S and writes P: each thread stores f32s and
 * loads ones another thread of its subgroup stored, `chains` independent values per thread,
 * `iterations` times, no barrier between (the barrier is its own row). Work: bytes through
 * workgroup memory (4 stored + 4 loaded per element).
 */
export function workgroupRoundTripKernel(workgroups: number, iterations: number, chains: number): CeilingKernel {
  const slots = 16 / chains;
  const cs = Array.from({ length: chains }, (_, c) => c);
  const at = (slot: string, c: number, lane: string) => `(${slot} * ${chains}u + ${c}u) * ${THREADS}u + ${lane}`;
  const wgsl = `@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
var<workgroup> w: array<f32, ${slots * chains * THREADS}>;
@compute @workgroup_size(${THREADS})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(global_invocation_id) gid: vec3<u32>) {
${cs.map((c) => `  var v${c} = src[(lid + ${c}u) % 4u];`).join('\n')}
  for (var i = lid; i < ${slots * chains * THREADS}u; i += ${THREADS}u) { w[i] = v0; }
  for (var it = 0u; it < ${iterations}u; it++) {
    let s = it % ${slots}u;
    let t = (s + 1u) % ${slots}u;
${cs.map((c) => `    w[${at('s', c, 'lid')}] = v${c};`).join('\n')}
${cs.map((c) => `    v${c} = w[${at('t', c, '(lid ^ 1u)')}] * 0.999 + 1.0;`).join('\n')}
  }
  out[gid.x] = ${cs.map((c) => `v${c}`).join(' + ')};
}`;
  return {
    name: `workgroup memory, f32 store + load per element, ${chains} independent per thread`,
    unit: 'byte',
    wgsl,
    workgroups,
    work: 8 * chains * iterations * THREADS * workgroups,
    buffers: [workgroups * THREADS * 4, 16],
  };
}

/**
 * Storage copy, vec4<f32>: each thread loads `perThread` vectors a workgroup-width apart, then
 * stores them (loads in flight together, as a K/V prefetch has). Work: bytes read + written.
 */
export function storageCopyKernel(bytes: number, perThread: number): CeilingKernel {
  const vecs = bytes / 16;
  const span = THREADS * perThread;
  const ks = Array.from({ length: perThread }, (_, k) => k);
  const wgsl = `@group(0) @binding(0) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@compute @workgroup_size(${THREADS})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let base = (wid.x + wid.y * ${GRID_X}u) * ${span}u + lid;
${ks.map((k) => `  let x${k} = src[base + ${k * THREADS}u];`).join('\n')}
${ks.map((k) => `  dst[base + ${k * THREADS}u] = x${k};`).join('\n')}
}`;
  return {
    name: `storage copy, vec4<f32>, ${perThread} per thread, ${bytes / 2 ** 20} MiB`,
    unit: 'byte',
    wgsl,
    workgroups: Math.ceil(vecs / span),
    work: 2 * bytes,
    buffers: [bytes, bytes],
  };
}

/**
 * Storage copy with a fixed grid: `workgroups` workgroups stride through the buffer, each thread
 * `perThread` vec4 loads in flight per step (the count a resident kernel has, not one workgroup
 * per 4–16 KiB). Work: bytes read + written.
 */
export function storageCopyGridKernel(bytes: number, workgroups: number, perThread: number): CeilingKernel {
  const vecs = bytes / 16;
  const span = THREADS * perThread;
  const ks = Array.from({ length: perThread }, (_, k) => k);
  const wgsl = `@group(0) @binding(0) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@compute @workgroup_size(${THREADS})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  for (var base = wid.x * ${span}u + lid; base < ${vecs}u; base += ${workgroups * span}u) {
${ks.map((k) => `    let x${k} = src[base + ${k * THREADS}u];`).join('\n')}
${ks.map((k) => `    dst[base + ${k * THREADS}u] = x${k};`).join('\n')}
  }
}`;
  return {
    name: `storage copy, vec4<f32>, ${perThread} per thread, ${workgroups} workgroups striding, ${bytes / 2 ** 20} MiB`,
    unit: 'byte',
    wgsl,
    workgroups,
    work: 2 * bytes,
    buffers: [bytes, bytes],
  };
}

/** Storage read, vec4<f32>, `perThread` loads in flight per thread, summed (as decoding streams K/V). Work: bytes read. */
export function storageReadKernel(bytes: number, perThread: number): CeilingKernel {
  const span = THREADS * perThread;
  const ks = Array.from({ length: perThread }, (_, k) => k);
  const wgsl = `@group(0) @binding(0) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@compute @workgroup_size(${THREADS})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let w = wid.x + wid.y * ${GRID_X}u;
  let base = w * ${span}u + lid;
  out[w * ${THREADS}u + lid] = ${ks.map((k) => `src[base + ${k * THREADS}u]`).join(' + ')};
}`;
  const workgroups = Math.ceil(bytes / 16 / span);
  return {
    name: `storage read, vec4<f32>, ${perThread} per thread, ${bytes / 2 ** 20} MiB`,
    unit: 'byte',
    wgsl,
    workgroups,
    work: bytes,
    buffers: [workgroups * THREADS * 16, bytes],
  };
}

/**
 * i32 atomicAdd into storage as the matrix backward adds dQ: each thread adds to `perThread`
 * words a workgroup-width apart in a buffer of `words`, consecutive workgroups on the same
 * rows (key blocks adding into the same query rows). Work: atomic adds (reported per second).
 */
export function atomicAddKernel(words: number, perThread: number, workgroups: number): CeilingKernel {
  const wgsl = `@group(0) @binding(0) var<storage, read_write> acc: array<atomic<i32>>;
@group(0) @binding(1) var<storage, read> src: array<i32>;
@compute @workgroup_size(${THREADS})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let v = src[lid % 4u] & 255;
  let base = ((wid.x / 8u) * ${THREADS * perThread}u) % ${words}u;
  for (var k = 0u; k < ${perThread}u; k++) { atomicAdd(&acc[(base + k * ${THREADS}u + lid) % ${words}u], v); }
}`;
  return {
    name: `atomicAdd i32 to storage, 8 workgroups on each row block`,
    unit: 'atomic',
    wgsl,
    workgroups,
    work: perThread * THREADS * workgroups,
    buffers: [words * 4, 16],
  };
}

/**
 * Barrier cost: `iterations` workgroupBarrier()s between workgroup-memory steps, against the
 * same loop without them (`withBarrier` false); the difference over the barrier count is the
 * cost of one barrier at this occupancy. Work: barriers executed (per workgroup, summed).
 */
export function barrierKernel(workgroups: number, iterations: number, withBarrier: boolean): CeilingKernel {
  const wgsl = `@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
var<workgroup> w: array<f32, ${THREADS}>;
@compute @workgroup_size(${THREADS})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(global_invocation_id) gid: vec3<u32>) {
  var v = src[lid % 4u];
  for (var it = 0u; it < ${iterations}u; it++) {
    w[lid] = v;
    ${withBarrier ? 'workgroupBarrier();' : ''}
    v = w[(lid + 1u) % ${THREADS}u] * 0.999 + 1.0;
    ${withBarrier ? 'workgroupBarrier();' : ''}
  }
  out[gid.x] = v;
}`;
  return {
    name: withBarrier ? 'workgroupBarrier(), 256 threads' : 'the same loop without barriers',
    unit: 'barrier',
    wgsl,
    workgroups,
    work: 2 * iterations * workgroups,
    buffers: [workgroups * THREADS * 4, 16],
  };
}

/** exp2 throughput: `chains` independent chains per thread, as the softmax has independent scores. */
export function expKernel(workgroups: number, iterations: number, chains: number): CeilingKernel {
  const cs = Array.from({ length: chains }, (_, c) => c);
  const wgsl = `@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@compute @workgroup_size(${THREADS})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let x = src[0] + f32(gid.x % 7u) * 1e-3;
${cs.map((c) => `  var e${c} = x + ${(c / chains).toFixed(3)};`).join('\n')}
  for (var it = 0u; it < ${iterations}u; it++) {
${cs.map((c) => `    e${c} = exp2(e${c} - 1.0);`).join('\n')}
  }
  out[gid.x] = ${cs.map((c) => `e${c}`).join(' + ')};
}`;
  return {
    name: `exp2, f32, ${chains} independent per thread`,
    unit: 'exp',
    wgsl,
    workgroups,
    work: chains * iterations * THREADS * workgroups,
    buffers: [workgroups * THREADS * 4, 16],
  };
}
