// The problem panel's form: what the person typed (kept as typed, so a bad value is never
// lost) and its conversion to a LoadRequest with a message naming the bad field.

import type { LoadRequest } from '../../engine/debugger/protocol.ts';
import type { InputDistribution } from '../../engine/inputs.ts';
import type { AttentionProblem, DType } from '../../engine/problem.ts';
import { hasBackward, type Pass } from '../../engine/debugger/pass.ts';

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
  if (f.distribution === 'outlier-row' && f.outlierRow.trim() !== '') {
    const r = int('outlier row', f.outlierRow, 0);
    if (r >= problem.nq) throw new FormError('outlier row', `must be below nq (${problem.nq}), got ${r}`);
    req.outlierRow = r;
  }
  return req;
}
