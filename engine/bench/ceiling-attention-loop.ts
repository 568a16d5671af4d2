// The forward's inner loop with no HBM: what the best schedule WGSL can express reaches when
// K/V never have to be loaded. Each subgroup holds R query rows (Q as left matrices, O as
// result matrices), and per block of BN keys runs Q·Kᵀ from workgroup K, stores its S stripe,
// runs the online softmax on plain lanes (max, shuffle, exp2, P stored as f16), loads P back as
// left matrices and runs P·V from workgroup V — the flash-matrix kernel's stages without the
// K/V staging. With barriers 'workgroup' it has the kernel's two barriers per block; with
// 'none' it has none (S and P stripes are the subgroup's own), an upper bound WGSL's memory
// model does not let a kernel rely on, since WGSL has no subgroup-scope barrier.
// R = 32 makes each K and V operand load feed two MMAs. Work: attention FLOPs, 4·R·BN·d per
// subgroup per block, so the rate reads directly against the forward's TFLOP/s.

import type { CeilingKernel } from './ceiling-kernels.ts';

export interface AttentionLoopOptions {
  /** Subgroups per workgroup. */
  subgroups: number;
  subgroupSize: number;
  /** Query rows per subgroup: 16 or 32. */
  rows: 16 | 32;
  /** Keys per block, a multiple of 16. */
  bn: number;
  d: number;
  barriers: 'workgroup' | 'none';
  /** false: P = S as f16 with no max, shuffle or exp2 (what the MMAs and the round trip cost alone). */
  softmax: boolean;
  /** false: no S store, softmax or P load, one barrier at most; P·V takes Q's matrices as P (what fragment element access would leave). */
  roundTrip?: boolean;
  blocks: number;
  workgroups: number;
}

const each = (n: number, f: (i: number) => string, sep = '\n') => Array.from({ length: n }, (_, i) => f(i)).join(sep);

/** Workgroup-memory bytes of one workgroup (K, V, the S stripes, the P stripes), as the forward pads its rows. */
export function attentionLoopBytes(o: Pick<AttentionLoopOptions, 'subgroups' | 'rows' | 'bn' | 'd'>): number {
  const bm = o.subgroups * o.rows;
  return 2 * o.bn * (o.d + 8) * 2 + bm * (o.bn + 4) * 4 + bm * (o.bn + 8) * 2;
}

export function attentionLoopKernel(o: AttentionLoopOptions): CeilingKernel {
  const { rows: R, bn: BN, d: D } = o;
  const rb = R / 16;
  const qm = D / 16;
  const kbl = BN / 16;
  const threads = o.subgroups * o.subgroupSize;
  const lanesPerRow = o.subgroupSize / R;
  const scols = BN / lanesPerRow;
  const left = 'subgroup_matrix_left<f16, 16, 16>';
  const right = 'subgroup_matrix_right<f16, 16, 16>';
  const result = 'subgroup_matrix_result<f32, 16, 16>';
  const trip = o.roundTrip !== false;
  const barrier = o.barriers === 'workgroup' ? '    workgroupBarrier();' : '';
  const cols = Array.from({ length: scols }, (_, c) => c);
  const softmax = !trip
    ? ''
    : o.softmax
      ? `${cols.map((c) => `    let x${c} = ss[srow * SW + ${c * lanesPerRow}u + part] * 1.4427;`).join('\n')}
    var mx = ${cols.map((c) => `x${c}`).reduce((a, b) => `max(${a}, ${b})`)};
${each(Math.log2(lanesPerRow), (i) => `    mx = max(mx, subgroupShuffleXor(mx, ${1 << i}u));`)}
    m = max(m, mx);
${cols.map((c) => `    { let p = exp2(x${c} - m); ps[srow * PW + ${c * lanesPerRow}u + part] = f16(p); l += p; }`).join('\n')}`
      : cols.map((c) => `    ps[srow * PW + ${c * lanesPerRow}u + part] = f16(ss[srow * SW + ${c * lanesPerRow}u + part]);`).join('\n');
  // jo is 0 at run time but unknown to the compiler: the S, P and V offsets stay run-time values
  // as in the forward (where constant ones let the driver move loads across barriers); K's are constant, as there.
  const wgsl = `enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
requires subgroup_id, subgroup_uniformity;
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<f16>;
const KSW = ${D + 8}u;
const SW = ${BN + 4}u;
const PW = ${BN + 8}u;
var<workgroup> ks: array<f16, ${BN * (D + 8)}>;
var<workgroup> vs: array<f16, ${BN * (D + 8)}>;
var<workgroup> ss: array<f32, ${o.subgroups * R * (BN + 4)}>;
var<workgroup> ps: array<f16, ${o.subgroups * R * (BN + 8)}>;
var<workgroup> woff: u32;
@compute @workgroup_size(${threads})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sg: u32,
        @builtin(subgroup_invocation_id) sl: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  for (var i = lid; i < ${BN * (D + 8)}u; i += ${threads}u) { ks[i] = src[i % 4096u] * 0.25h; vs[i] = src[(i + 7u) % 4096u]; }
  if (lid == 0u) { woff = u32(src[0] == 3.0h); }
  let off = workgroupUniformLoad(&woff);
${each(rb, (r) => each(qm, (i) => `  let q${r}_${i} = subgroupMatrixLoad<${left}, row_major>(&ks, off * KSW + ${r * 8 + i * 16}u, KSW);`))}
${each(rb, (r) => each(qm, (j) => `  var o${r}_${j} = ${result}();`))}
  let srow = sg * ${R}u + sl / ${lanesPerRow}u;
  let part = sl % ${lanesPerRow}u;
  var m = -1e30;
  var l = 0.0;
${trip ? '' : each(rb, (r) => each(kbl, (b) => `  var a${r}_${b} = ${result}();`))}
  for (var t = 0u; t < ${o.blocks}u; t++) {
    let jo = (t & 1u) * off;
${trip ? each(rb, (r) => each(kbl, (b) => `    var a${r}_${b} = ${result}();`)) : ''}
${each(qm, (i) => each(kbl, (b) => `    { let km = subgroupMatrixLoad<${right}, col_major>(&ks, ${b * 16}u * KSW + ${i * 16}u, KSW);\n${each(rb, (r) => `      a${r}_${b} = subgroupMatrixMultiplyAccumulate(q${r}_${i}, km, a${r}_${b});`)} }`))}
${trip ? each(rb, (r) => each(kbl, (b) => `    subgroupMatrixStore<row_major>(&ss, jo + (sg * ${R}u + ${r * 16}u) * SW + ${b * 16}u, a${r}_${b}, SW);`)) : ''}
${barrier}
${softmax}
${trip ? barrier : ''}
    for (var kb = 0u; kb < ${BN}u; kb += 16u) {
${each(rb, (r) => (trip ? `      let p${r} = subgroupMatrixLoad<${left}, row_major>(&ps, jo + (sg * ${R}u + ${r * 16}u) * PW + kb, PW);` : `      let p${r} = q${r}_0;`))}
${each(qm, (j) => `      { let vm = subgroupMatrixLoad<${right}, row_major>(&vs, (kb + jo) * KSW + ${j * 16}u, KSW);\n${each(rb, (r) => `        o${r}_${j} = subgroupMatrixMultiplyAccumulate(p${r}, vm, o${r}_${j});`)} }`)}
    }
  }
  let base = (wid.x * ${o.subgroups}u + sg) * ${R * D}u;
${each(rb, (r) => each(qm, (j) => `  subgroupMatrixStore<row_major>(&out, base + ${r * 16 * D + j * 16}u, o${r}_${j}, ${D}u);`))}
${trip ? '' : each(rb, (r) => each(kbl, (b) => `  subgroupMatrixStore<row_major>(&out, ${o.workgroups * o.subgroups * R * D}u + (wid.x * ${o.subgroups}u + sg) * ${R * BN}u + ${r * 16 * BN + b * 16}u, a${r}_${b}, ${BN}u);`))}
  if (l == 12345.0) { out[0] = m; }
}`;
  const kb = attentionLoopBytes(o);
  return {
    name: `attention loop, no HBM: ${o.subgroups} subgroups × ${R} rows, BN ${BN}, d ${D}, ${o.barriers === 'workgroup' ? (trip ? '2 workgroup barriers' : '1 workgroup barrier (K/V staging would keep it)') : 'no barrier'} per block${o.softmax ? '' : ', no softmax'}${trip ? '' : ', no S/P round trip'} (${(kb / 1024).toFixed(1)} KiB workgroup memory)`,
    unit: 'FLOP',
    wgsl,
    workgroups: o.workgroups,
    work: 4 * R * BN * D * o.blocks * o.subgroups * o.workgroups,
    buffers: [o.workgroups * o.subgroups * R * (D + BN) * 4, 8192],
  };
}

/** The schedules measured at d 128: the forward's own, R = 32, two workgroups per SM, no barriers, no softmax. */
export function attentionLoopSet(subgroupSize: number, small: boolean): AttentionLoopOptions[] {
  const base = {
    subgroupSize,
    d: 128,
    softmax: true,
    blocks: small ? 2 : 256,
    workgroups: small ? 4 : 1056,
  } as const;
  return [
    { ...base, subgroups: 8, rows: 16, bn: 32, barriers: 'workgroup' },
    { ...base, subgroups: 8, rows: 16, bn: 32, barriers: 'none' },
    { ...base, subgroups: 8, rows: 16, bn: 32, barriers: 'workgroup', softmax: false },
    { ...base, subgroups: 8, rows: 16, bn: 32, barriers: 'none', softmax: false },
    { ...base, subgroups: 4, rows: 32, bn: 32, barriers: 'workgroup' },
    { ...base, subgroups: 4, rows: 32, bn: 32, barriers: 'none' },
    { ...base, subgroups: 8, rows: 16, bn: 16, barriers: 'workgroup' },
    { ...base, subgroups: 4, rows: 16, bn: 16, barriers: 'workgroup' },
    { ...base, subgroups: 4, rows: 16, bn: 16, barriers: 'none' },
    { ...base, subgroups: 4, rows: 32, bn: 16, barriers: 'none' },
    { ...base, subgroups: 8, rows: 16, bn: 32, barriers: 'workgroup', roundTrip: false },
    { ...base, subgroups: 8, rows: 16, bn: 32, barriers: 'none', roundTrip: false },
  ];
}
