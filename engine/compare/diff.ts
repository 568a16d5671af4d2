// What compare mode puts side by side: each pane's totals, error against the float64
// reference, and the element-wise difference of two outputs. Pure functions over plain
// data, so the table the UI shows is the table the tests check.

import { totalBytes, type Counters } from '../core/counters.ts';

/** Error of an output against the float64 reference (both [.. × dv], same order). */
export interface ErrorStats {
  maxAbs: number;
  /** Index of the worst element, -1 when there are none. */
  argMax: number;
  meanAbs: number;
  /** Root mean square error over the finite elements (the FA3 paper's figure). */
  rmse: number;
  /** Σ|got − want| / Σ|want| over the finite elements (SageAttention's figure); 0 when both sums are 0. */
  relL1: number;
  /** Elements where exactly one side is non-finite, or both are but differ. */
  nonFinite: number;
}

export function errorStats(got: ArrayLike<number>, want: ArrayLike<number>): ErrorStats {
  if (got.length !== want.length) throw new Error(`output lengths differ: ${got.length} vs ${want.length}`);
  let maxAbs = 0;
  let argMax = -1;
  let sum = 0;
  let sq = 0;
  let refL1 = 0;
  let finite = 0;
  let nonFinite = 0;
  for (let i = 0; i < got.length; i++) {
    const a = got[i];
    const b = want[i];
    if (!Number.isFinite(a) || !Number.isFinite(b)) {
      if (!Object.is(a, b)) nonFinite++;
      continue;
    }
    const e = Math.abs(a - b);
    finite++;
    sum += e;
    sq += e * e;
    refL1 += Math.abs(b);
    if (e > maxAbs || argMax < 0) {
      maxAbs = e;
      argMax = i;
    }
  }
  return {
    maxAbs,
    argMax,
    meanAbs: finite ? sum / finite : 0,
    rmse: finite ? Math.sqrt(sq / finite) : 0,
    relL1: refL1 > 0 ? sum / refL1 : sum === 0 ? 0 : Infinity,
    nonFinite,
  };
}

/** a − b element-wise (NaN where either is not finite), with its largest magnitude. */
export function outputDifference(a: ArrayLike<number>, b: ArrayLike<number>): { diff: Float32Array; maxAbs: number } {
  if (a.length !== b.length)
    throw new Error(`the two outputs have different sizes (${a.length} and ${b.length} elements); compare panes must run the same problem`);
  const diff = new Float32Array(a.length);
  let maxAbs = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Number.isFinite(a[i]) && Number.isFinite(b[i]) ? a[i] - b[i] : NaN;
    diff[i] = d;
    if (Math.abs(d) > maxAbs) maxAbs = Math.abs(d);
  }
  return { diff, maxAbs };
}

/** Prediction of the hardware model for one pane; `reason` says why there is none. */
export type Prediction = { gpu: string; timeUs: number; tflops: number; bound: string } | { gpu: string; reason: string };

export interface PaneResult {
  label: string;
  counters: Counters;
  error: ErrorStats;
  prediction: Prediction;
}

export interface DiffRow {
  metric: string;
  /** One cell per pane, already formatted. */
  values: string[];
  /** Raw numbers (NaN where not available), for the CSV and the tests. */
  raw: number[];
  /** Pane index with the lowest value where lower is better, -1 when all equal or not comparable. */
  best: number;
}

const fmtInt = (n: number) => n.toLocaleString('en-US');
const fmtExp = (n: number) => (n === 0 ? '0' : n.toExponential(3));

function row(metric: string, raw: number[], fmt: (n: number) => string, lowerIsBetter: boolean, missing: string[] = []): DiffRow {
  const finite = raw.filter(Number.isFinite);
  let best = -1;
  if (lowerIsBetter && finite.length === raw.length && new Set(raw).size > 1) best = raw.indexOf(Math.min(...raw));
  return { metric, raw, values: raw.map((n, i) => (Number.isFinite(n) ? fmt(n) : (missing[i] ?? '—'))), best };
}

/** The difference table, one row per metric, one column per pane. */
export function diffTable(panes: PaneResult[]): DiffRow[] {
  const c = panes.map((p) => p.counters);
  const pred = panes.map((p) => p.prediction);
  const noModel = pred.map((p) => ('reason' in p ? p.reason : ''));
  return [
    row(
      'HBM bytes read',
      c.map((x) => totalBytes(x.hbmRead)),
      fmtInt,
      true,
    ),
    row(
      'HBM bytes written',
      c.map((x) => totalBytes(x.hbmWritten)),
      fmtInt,
      true,
    ),
    row(
      'matmul FLOPs',
      c.map((x) => x.matmulFlops),
      fmtInt,
      true,
    ),
    row(
      'non-matmul FLOPs',
      c.map((x) => x.nonMatmulFlops),
      fmtInt,
      true,
    ),
    row(
      'exp count',
      c.map((x) => x.expCount),
      fmtInt,
      true,
    ),
    row(
      'rescale count',
      c.map((x) => x.rescaleCount),
      fmtInt,
      true,
    ),
    row(
      'atomic adds',
      c.map((x) => x.atomicAdds),
      fmtInt,
      true,
    ),
    row(
      'steps',
      c.map((x) => x.steps),
      fmtInt,
      false,
    ),
    row(
      'predicted time (µs)',
      pred.map((p) => ('timeUs' in p ? p.timeUs : NaN)),
      (n) => n.toFixed(2),
      true,
      noModel,
    ),
    row(
      'predicted TFLOP/s',
      pred.map((p) => ('tflops' in p ? p.tflops : NaN)),
      (n) => n.toFixed(1),
      false,
      noModel,
    ),
    row(
      'max |error| vs float64',
      panes.map((p) => p.error.maxAbs),
      fmtExp,
      true,
    ),
    row(
      'mean |error| vs float64',
      panes.map((p) => p.error.meanAbs),
      fmtExp,
      true,
    ),
    row(
      'RMSE vs float64',
      panes.map((p) => p.error.rmse),
      fmtExp,
      true,
    ),
    row(
      'rel-L1 vs float64',
      panes.map((p) => p.error.relL1),
      fmtExp,
      true,
    ),
  ];
}

/**
 * One line per pane saying how a row's value stands against the others, in two parts: against
 * the lowest ("lowest" there, else "61.04× pane 1's") and against the next worse pane, so
 * neighbours read directly ("1.71× below pane 2"). `names` are the panes' short names.
 * Empty strings where a value is missing, or where every value is equal; a zero divides to ∞.
 */
export function ratioNotes(raw: number[], names: string[]): string[] {
  const ok = raw.map((v) => Number.isFinite(v) && v >= 0);
  const order = raw
    .map((_, i) => i)
    .filter((i) => ok[i])
    .sort((a, b) => raw[a] - raw[b]);
  if (order.length < 2 || raw[order[0]] === raw[order[order.length - 1]]) return raw.map(() => '');
  const best = order[0];
  const factor = (num: number, den: number) => (den === 0 ? '∞' : `${(num / den).toFixed(2)}×`);
  return raw.map((v, i) => {
    if (!ok[i]) return '';
    const vsBest = v === raw[best] ? (i === best ? 'lowest' : `equal to ${names[best]}`) : `${factor(v, raw[best])} ${names[best]}'s`;
    const worse = order.find((j) => raw[j] > v);
    return worse === undefined ? vsBest : `${vsBest}; ${factor(raw[worse], v)} below ${names[worse]}`;
  });
}

/** The table as CSV (metric, then one column per pane, raw numbers). */
export function diffTableCsv(labels: string[], rows: DiffRow[]): string {
  const esc = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const lines = [['metric', ...labels].map(esc).join(',')];
  for (const r of rows) lines.push([r.metric, ...r.raw.map((n) => (Number.isFinite(n) ? String(n) : ''))].map(esc).join(','));
  return lines.join('\n') + '\n';
}

/** Counters as CSV rows: one line per quantity, HBM traffic also per tensor. */
export function countersCsv(c: Counters): string {
  const lines = ['counter,value'];
  lines.push(`hbm_bytes_read,${totalBytes(c.hbmRead)}`, `hbm_bytes_written,${totalBytes(c.hbmWritten)}`);
  for (const [t, n] of Object.entries(c.hbmRead)) lines.push(`hbm_bytes_read.${t},${n}`);
  for (const [t, n] of Object.entries(c.hbmWritten)) lines.push(`hbm_bytes_written.${t},${n}`);
  lines.push(
    `matmul_flops,${c.matmulFlops}`,
    `non_matmul_flops,${c.nonMatmulFlops}`,
    `exp_count,${c.expCount}`,
    `rescale_count,${c.rescaleCount}`,
    `atomic_adds,${c.atomicAdds}`,
    `steps,${c.steps}`,
  );
  return lines.join('\n') + '\n';
}
