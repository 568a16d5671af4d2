// A lesson's LoadRequest shown in the pane's problem form, so the problem panel displays
// what the lesson loaded and "Load" there starts from it.

import type { LoadRequest } from '../../engine/api.ts';
import { DEFAULT_FORM, type ProblemForm } from '../store/problem-form.ts';

export function requestToForm(r: LoadRequest, resolved?: { blockM: number; blockN: number }): ProblemForm {
  const p = r.problem;
  const sram = r.blocks.sramBytes !== undefined && r.blocks.blockM === undefined && r.blocks.blockN === undefined;
  return {
    ...DEFAULT_FORM,
    algorithm: r.algorithm,
    pass: r.pass ?? 'forward',
    batch: String(p.batch),
    hq: String(p.hq),
    hk: String(p.hk),
    nq: String(p.nq),
    nk: String(p.nk),
    d: String(p.d),
    dv: String(p.dv),
    blockMode: sram ? 'sram' : 'explicit',
    sramBytes: String(r.blocks.sramBytes ?? DEFAULT_FORM.sramBytes),
    blockM: String(r.blocks.blockM ?? resolved?.blockM ?? DEFAULT_FORM.blockM),
    blockN: String(r.blocks.blockN ?? resolved?.blockN ?? DEFAULT_FORM.blockN),
    causal: p.causal,
    windowLeft: p.window && p.window.left >= 0 ? String(p.window.left) : '',
    windowRight: p.window && p.window.right >= 0 ? String(p.window.right) : '',
    alibi: !!p.alibi,
    softcap: p.softcap !== undefined ? String(p.softcap) : '',
    // The form holds one sink logit for every head; a preset with per-head values would not fit it.
    sink: p.sinks && p.sinks.length > 0 && p.sinks.every((v) => v === p.sinks![0]) ? String(p.sinks[0]) : '',
    // Mask text travels as typed; a mask that reads aux arrays has no text form and is left out.
    maskMod: p.mask && !p.mask.aux ? (p.mask.maskMod ?? '') : '',
    scoreMod: p.mask && !p.mask.aux ? (p.mask.scoreMod ?? '') : '',
    dtype: p.dtype,
    seed: String(r.seed),
    distribution: r.distribution,
    outlierRow: r.outlierRow !== undefined ? String(r.outlierRow) : '',
  };
}
