// The problem panel's form: what the person typed (kept as typed, so a bad value is never
// lost) and its conversion to a LoadRequest with a message naming the bad field.

import type { LoadRequest } from '../../engine/debugger/protocol.ts';
import type { InputDistribution } from '../../engine/inputs.ts';
import { isFp8, type AttentionProblem, type DType } from '../../engine/problem.ts';
import { hasBackward, type Pass } from '../../engine/debugger/pass.ts';
import { FA3_FEATURES } from '../../engine/algorithms/fa3.ts';
import type { FeatureSpec } from '../../engine/algorithms/features.ts';

/** A kernel switch the problem panel offers: the engine's spec, its label and whether only FP8 runs take it. */
export interface PanelSwitch {
  key: string;
  label: string;
  spec: FeatureSpec<boolean> | FeatureSpec<number>;
  fp8Only: boolean;
}

/**
 * The switches the problem panel shows per algorithm (the rest stay in the hardware views
 * and the lessons): FA3's K/V order and its FP8 path's quantization and P-cast switches.
 */
export const PANEL_SWITCHES: Record<string, PanelSwitch[]> = {
  fa3: [
    { key: 'blockQuant', label: 'blockQuant', spec: FA3_FEATURES.blockQuant, fp8Only: true },
    { key: 'incoherent', label: 'incoherent', spec: FA3_FEATURES.incoherent, fp8Only: true },
    { key: 'pScale', label: 'pScale', spec: FA3_FEATURES.pScale, fp8Only: true },
    { key: 'reverseKv', label: 'reverseKv', spec: FA3_FEATURES.reverseKv, fp8Only: false },
    { key: 'seed', label: 'Hadamard seed', spec: FA3_FEATURES.seed, fp8Only: true },
  ],
};

export interface ProblemForm {
  algorithm: string;
  /** Which pass the debugger steps through: the forward, or the gradients (dO from the seed). */
  pass: Pass;
  batch: string;
  hq: string;
  hk: string;
  nq: string;
  nk: string;
  d: string;
  dv: string;
  blockMode: 'sram' | 'explicit';
  sramBytes: string;
  blockM: string;
  blockN: string;
  causal: boolean;
  /** Empty: no sliding window on that side. */
  windowLeft: string;
  windowRight: string;
  alibi: boolean;
  /** Empty: no softcap. */
  softcap: string;
  /** Empty: no attention sink; else one sink logit used for every query head. */
  sink: string;
  dtype: DType;
  seed: string;
  distribution: InputDistribution;
  outlierRow: string;
  /**
   * The panel's kernel switches (PANEL_SWITCHES) the person set, by key: booleans as
   * checked, numbers as typed. A switch not here keeps the loaded run's value, or the default.
   */
  switches: Record<string, boolean | string>;
}

export const DEFAULT_FORM: ProblemForm = {
  algorithm: 'fa2',
  pass: 'forward',
  batch: '1',
  hq: '1',
  hk: '1',
  nq: '64',
  nk: '64',
  d: '32',
  dv: '32',
  blockMode: 'explicit',
  sramBytes: '16384',
  blockM: '16',
  blockN: '16',
  causal: false,
  windowLeft: '',
  windowRight: '',
  alibi: false,
  softcap: '',
  sink: '',
  dtype: 'fp32',
  seed: '1',
  distribution: 'normal',
  outlierRow: '',
  switches: {},
};

export class FormError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

function int(field: string, v: string, min = 1): number {
  const t = v.trim();
  if (!/^-?\d+$/.test(t)) throw new FormError(field, `must be a whole number, got "${v}"`);
  const n = Number(t);
  if (n < min) throw new FormError(field, `must be at least ${min}, got ${n}`);
  return n;
}

export function formToRequest(f: ProblemForm): LoadRequest {
  const problem: AttentionProblem = {
    batch: int('batch', f.batch),
    hq: int('hq', f.hq),
    hk: int('hk', f.hk),
    nq: int('nq', f.nq),
    nk: int('nk', f.nk),
    d: int('d', f.d),
    dv: int('dv', f.dv),
    causal: f.causal,
    dtype: f.dtype,
  };
  if (f.windowLeft.trim() !== '' || f.windowRight.trim() !== '') {
    problem.window = {
      left: f.windowLeft.trim() === '' ? -1 : int('window left', f.windowLeft, 0),
      right: f.windowRight.trim() === '' ? -1 : int('window right', f.windowRight, 0),
    };
  }
  if (f.alibi) problem.alibi = 'standard';
  if (f.softcap.trim() !== '') {
    const c = Number(f.softcap);
    if (!(Number.isFinite(c) && c > 0)) throw new FormError('softcap', `must be a number > 0, got "${f.softcap}"`);
    problem.softcap = c;
  }
  if (f.sink.trim() !== '') {
    const v = Number(f.sink);
    if (!Number.isFinite(v)) throw new FormError('sink', `must be a number, got "${f.sink}"`);
    problem.sinks = new Array<number>(problem.hq).fill(v);
  }
  const blocks = f.blockMode === 'sram' ? { sramBytes: int('on-chip memory M', f.sramBytes) } : { blockM: int('Br', f.blockM), blockN: int('Bc', f.blockN) };
  const req: LoadRequest = { algorithm: f.algorithm, problem, seed: int('seed', f.seed, 0), distribution: f.distribution, blocks };
  if (f.pass === 'backward') {
    if (!hasBackward(f.algorithm)) throw new FormError('pass', `${f.algorithm} has no backward pass in FlashScope; choose Forward, or one of the algorithms that have one`);
    req.pass = 'backward';
  }
  const features = switchFeatures(f);
  if (features) req.features = features;
  if (f.distribution === 'outlier-row' && f.outlierRow.trim() !== '') {
    const r = int('outlier row', f.outlierRow, 0);
    if (r >= problem.nq) throw new FormError('outlier row', `must be below nq (${problem.nq}), got ${r}`);
    req.outlierRow = r;
  }
  return req;
}

/** The panel's switches this form sends: those the person set, FP8-only ones on FP8 runs only. */
export function switchFeatures(f: ProblemForm): Record<string, boolean | number> | undefined {
  const out: Record<string, boolean | number> = {};
  for (const sw of PANEL_SWITCHES[f.algorithm] ?? []) {
    const v = f.switches[sw.key];
    if (v === undefined || (sw.fp8Only && !isFp8(f.dtype))) continue;
    if (typeof sw.spec.default === 'boolean') {
      if (typeof v !== 'boolean') throw new FormError(`switches.${sw.key}`, `must be on or off, got "${String(v)}"`);
      out[sw.key] = v;
      continue;
    }
    const t = String(v).trim();
    const n = Number(t);
    if (t === '' || !Number.isFinite(n)) throw new FormError(`switches.${sw.key}`, `must be a number, got "${String(v)}"`);
    const why = (sw.spec as FeatureSpec<number>).check?.(n);
    if (why) throw new FormError(`switches.${sw.key}`, why);
    out[sw.key] = n;
  }
  return Object.keys(out).length ? out : undefined;
}

/**
 * The request a load sends: the form's request with the loaded run's other switches kept
 * (those set in the hardware views or the lessons) when the algorithm is the same. The
 * form decides every switch it has; FP8-only switches are dropped from a non-FP8 run.
 */
export function withAppliedFeatures(req: LoadRequest, applied: LoadRequest | undefined): LoadRequest {
  const kept: Record<string, boolean | number> = applied?.algorithm === req.algorithm ? { ...applied.features } : {};
  const panel = PANEL_SWITCHES[req.algorithm] ?? [];
  for (const sw of panel) if (sw.fp8Only && !isFp8(req.problem.dtype)) delete kept[sw.key];
  const features = { ...kept, ...req.features };
  const out: LoadRequest = { ...req };
  if (Object.keys(features).length) out.features = features;
  else delete out.features;
  return out;
}
