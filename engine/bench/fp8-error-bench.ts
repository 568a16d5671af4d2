// `npm run bench:fp8`: the FA3 paper's FP8 error experiment, the P-cast sink experiment and
// SageAttention's INT8 rows (sage v1/v2, with and without K smoothing, on the same outlier
// inputs and on keys with a large per-channel mean), printed as the tables BENCHMARKS.md carries. Errors, not timings: RMSE of O against the
// float64 reference (engine/core/reference.ts), on the very fa3 the debugger steps.
//
//   --n N   sequence length of the error experiment (default 1024; the paper's runs are longer)

import { fa3 } from '../algorithms/fa3/forward.ts';
import { sage } from '../algorithms/sage/forward.ts';
import { mulberry32 } from '../core/random.ts';
import { randomInputs } from '../core/inputs.ts';
import { outputError } from '../lowprec/error-metrics.ts';
import { DEFAULT_PROBLEM, type AttentionProblem, type DType } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';
import { runToEnd } from '../run.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const n = arg('n', 1024);

const p: AttentionProblem = { ...DEFAULT_PROBLEM, nq: n, nk: n, d: 128, dv: 128 };
const x = randomInputs(p, { seed: 1, distribution: 'fa3-outliers' });
const ref = referenceAttention(p, x).o;
const rows: [string, string, DType, Record<string, boolean>][] = [
  ['FP16 FA3', '1.9e-4', 'fp16', {}],
  ['FP8 baseline (per-tensor scales)', '2.4e-2', 'fp8e4m3', { blockQuant: false, incoherent: false }],
  ['FP8 FA3 (block quantization + incoherent)', '9.1e-3', 'fp8e4m3', { blockQuant: true, incoherent: true }],
  ['FP8 without incoherent processing', '2.4e-2', 'fp8e4m3', { blockQuant: true, incoherent: false }],
  ['FP8 without block quantization', '9.3e-3', 'fp8e4m3', { blockQuant: false, incoherent: true }],
];
console.log(`FA3 FP8 error, fa3-outliers inputs, B=1 H=1 N=${n} d=128, tiles 128×128, RMSE of O against float64\n`);
console.log('| configuration | paper RMSE | FlashScope RMSE | max abs |');
console.log('|---|---|---|---|');
const rmse: number[] = [];
for (const [name, paper, dtype, features] of rows) {
  const e = outputError(runToEnd(fa3, { ...p, dtype }, x, { blockM: 128, blockN: 128, features }).o, ref);
  rmse.push(e.rmse);
  console.log(`| ${name} | ${paper} | ${e.rmse.toExponential(2)} | ${e.max_abs.toExponential(2)} |`);
}
console.log(`\nbaseline / FA3 FP8 = ${(rmse[1] / rmse[2]).toFixed(2)}× (paper 2.6×)\n`);

const ps: AttentionProblem = { ...DEFAULT_PROBLEM, nq: 64, nk: 512, d: 64, dv: 64, dtype: 'fp8e4m3' };
const xs = randomInputs(ps, { seed: 2, distribution: 'sink' });
console.log('P cast on the sink pattern (4 sink keys, Nq=64, Nk=512, d=64, tiles 64×64, no rotation): share of P > 0 flushed to 0 by the e4m3 cast\n');
console.log('| K/V order | pScale | flushed / cast |');
console.log('|---|---|---|');
for (const [reverseKv, pScale] of [[false, 1], [true, 1], [false, 256], [true, 256]] as const) {
  const r = runToEnd(fa3, ps, xs, { blockM: 64, blockN: 64, features: { incoherent: false, reverseKv, pScale } });
  console.log(`| ${reverseKv ? 'last to first (kernel)' : 'first to last'} | ${pScale} | ${r.stats!.flushedP} / ${r.stats!.castP} = ${(r.stats!.flushedP / r.stats!.castP).toFixed(4)} |`);
}

// SageAttention: INT8 Q·Kᵀ with per-block scales. The outlier inputs above, and keys whose
// channels carry a common offset (uniform in ±KMEAN per channel, on N(0,1) entries), the case
// K smoothing is for. FA3's FP16 and FP8 rows on the second input for comparison.
const KMEAN = 20;
const rnd = mulberry32(3);
const offset = Array.from({ length: p.d }, () => KMEAN * (2 * rnd() - 1));
const base = randomInputs(p, { seed: 1 });
const xk = { ...base, k: Float32Array.from(base.k, (v, i) => v + offset[i % p.d]) };
const refK = referenceAttention(p, xk).o;
console.log(`\nSageAttention (sage), B=1 H=1 N=${n} d=128, the kernels' 128×64 tiles, fp16 problem, RMSE of O against float64\n`);
console.log(`| configuration | fa3-outliers RMSE | K channel mean ±${KMEAN} RMSE | max abs (K mean) |`);
console.log('|---|---|---|---|');
const sageRows: [string, Record<string, number | boolean>][] = [
  ['sage v1 (INT8 QK, FP16 PV), smoothK', { version: 1, smoothK: true }],
  ['sage v1, no smoothing', { version: 1, smoothK: false }],
  ['sage v2 (INT8 QK per warp, FP8 PV), smoothK', { version: 2, smoothK: true }],
  ['sage v2, no smoothing', { version: 2, smoothK: false }],
];
for (const [name, features] of sageRows) {
  const a = outputError(runToEnd(sage, { ...p, dtype: 'fp16' }, x, { features }).o, ref);
  const b = outputError(runToEnd(sage, { ...p, dtype: 'fp16' }, xk, { features }).o, refK);
  console.log(`| ${name} | ${a.rmse.toExponential(2)} | ${b.rmse.toExponential(2)} | ${b.max_abs.toExponential(2)} |`);
}
for (const [name, dtype, features] of [
  ['FP16 FA3', 'fp16', {}],
  ['FP8 FA3 (block quantization + incoherent)', 'fp8e4m3', { blockQuant: true, incoherent: true }],
] as const) {
  const b = outputError(runToEnd(fa3, { ...p, dtype }, xk, { blockM: 128, blockN: 128, features }).o, refK);
  console.log(`| ${name} | (table above) | ${b.rmse.toExponential(2)} | ${b.max_abs.toExponential(2)} |`);
}
