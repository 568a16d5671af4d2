// Hypotheses for why the ceiling's storage copy reads 1.3–1.7 TB/s while the decoding kernel
// streams 4.1 TB/s on the same device: the element type (vec4<u32> as the decode kernel reads,
// vec4<f32> as the copy kernels did), the workgroup size, loads in flight per thread, a grid of
// resident workgroups looping over the buffer (the decode kernel's shape), and how the buffers
// were made (usage flags, mapped at creation). Each is a CeilingKernel timed like the others.

import { type CeilingKernel, GRID_X } from './ceiling-kernels.ts';

export interface StorageStudy {
  op: 'copy' | 'read';
  type: 'f32' | 'u32';
  threads: number;
  /** Loads in flight per thread, a workgroup-width apart. */
  perThread: number;
  /** Resident workgroups looping over the buffer; absent: one workgroup per span, no loop. */
  workgroups?: number;
  /** Buffers made with every usage a storage buffer may carry besides STORAGE and COPY_DST. */
  allUsages?: boolean;
  /** Buffers filled through mappedAtCreation instead of queue.writeBuffer. */
  mapped?: boolean;
}

export function storageStudyKernel(bytes: number, s: StorageStudy): CeilingKernel {
  const vec = `vec4<${s.type}>`;
  const vecs = bytes / 16;
  const span = s.threads * s.perThread;
  const ks = Array.from({ length: s.perThread }, (_, k) => k);
  const body = (base: string, pad: string) =>
    s.op === 'copy'
      ? `${ks.map((k) => `${pad}let x${k} = src[${base} + ${k * s.threads}u];`).join('\n')}\n${ks.map((k) => `${pad}dst[${base} + ${k * s.threads}u] = x${k};`).join('\n')}`
      : `${pad}acc += ${ks.map((k) => `src[${base} + ${k * s.threads}u]`).join(' + ')};`;
  const wgsl = `@group(0) @binding(0) var<storage, read_write> dst: array<${vec}>;
@group(0) @binding(1) var<storage, read> src: array<${vec}>;
@compute @workgroup_size(${s.threads})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let w = wid.x + wid.y * ${GRID_X}u;
  var acc = ${vec}();
${
  s.workgroups
    ? `  for (var base = w * ${span}u + lid; base < ${vecs}u; base += ${s.workgroups * span}u) {\n${body('base', '    ')}\n  }`
    : `  let base = w * ${span}u + lid;\n${body('base', '  ')}`
}
  ${s.op === 'read' ? `dst[w * ${s.threads}u + lid] = acc;` : '_ = acc;'}
}`;
  const workgroups = s.workgroups ?? Math.ceil(vecs / span);
  const label = [
    `storage ${s.op}, ${vec}, ${s.threads} threads, ${s.perThread} per thread`,
    s.workgroups ? `${s.workgroups} workgroups looping` : 'one workgroup per span',
    s.allUsages ? 'all usages' : '',
    s.mapped ? 'mapped at creation' : '',
    `${bytes / 2 ** 20} MiB`,
  ]
    .filter(Boolean)
    .join(', ');
  return {
    name: label,
    unit: 'byte',
    wgsl,
    workgroups,
    work: s.op === 'copy' ? 2 * bytes : bytes,
    buffers: [s.op === 'copy' ? bytes : workgroups * s.threads * 16, bytes],
    allUsages: s.allUsages,
    mapped: s.mapped,
  };
}

/** The study's set, one axis at a time from the copy kernel as measured (vec4<f32>, 256 threads, 4 per thread). */
export function storageStudySet(): StorageStudy[] {
  const base: StorageStudy = { op: 'copy', type: 'f32', threads: 256, perThread: 4 };
  return [
    base,
    { ...base, type: 'u32' },
    { ...base, type: 'u32', threads: 64 },
    { ...base, type: 'u32', threads: 128 },
    { ...base, allUsages: true },
    { ...base, mapped: true },
    { ...base, type: 'u32', threads: 128, workgroups: 1024 },
    { op: 'read', type: 'f32', threads: 256, perThread: 4 },
    { op: 'read', type: 'u32', threads: 256, perThread: 4 },
    { op: 'read', type: 'u32', threads: 128, perThread: 2, workgroups: 1024 },
    { op: 'read', type: 'u32', threads: 128, perThread: 4, workgroups: 1024 },
  ];
}
