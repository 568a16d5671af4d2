// The problem panel's form: what the person typed (kept as typed, so a bad value is never
// lost) and its conversion to a LoadRequest with a message naming the bad field.

import {
  type LoadRequest,
  type InputDistribution,
  isFp8,
  type DType,
  hasBackward,
  type Pass,
  DEFAULT_ALGORITHM,
  findDescriptor,
  type FeatureSpec,
  type FeatureSpecs,
  type SwitchValues,
  FieldError,
  fieldsToProblem,
  problemToFields,
  type ProblemFields,
  tileSide,
  wholeNumber,
} from '../../engine/api.ts';

/** Every panel switch's value as the next load would run it (set, loaded, or the kernel's default). */
export type { SwitchValues };

/** A kernel switch the problem panel offers: the engine's spec, its label and when it applies. */
export interface PanelSwitch {
  key: string;
  label: string;
  spec: FeatureSpec<boolean> | FeatureSpec<number>;
  /** Acts on FP8 runs only: shown disabled, and never sent, with a 16- or 32-bit dtype. */
  fp8Only: boolean;
  /** A numeric switch that takes only these values: shown as a select. */
  choices?: readonly number[];
  /**
   * Why the switch does not apply with these values of the others and this dtype (undefined:
   * it applies). A switch that does not apply is hidden and never sent, because the engine
   * refuses it (sage's qPerWarp on version 1) or would refuse the run (fmha-v2's fp16
   * accumulation on a non-fp16 run).
   */
  inactive?: (values: SwitchValues, dtype: DType) => string | undefined;
}

/** The switches a pass of the algorithm takes: the forward's, or its backward's (which may lack some of the forward's). */
function passSwitchSpecs(algorithm: string, pass: Pass): FeatureSpecs {
  const d = findDescriptor(algorithm);
  return (pass === 'backward' ? d?.backward?.switches : d?.switches) ?? {};
}

/**
 * The switches the problem panel shows for an algorithm's pass: those its descriptor marks `panel`
 * (they change the numbers or the steps of a run, so they are set before loading it); the
 * rest stay in the hardware views, the compare panes and the lessons.
 */
export function panelSwitches(algorithm: string, pass: Pass = 'forward'): PanelSwitch[] {
  return Object.entries(passSwitchSpecs(algorithm, pass))
    .filter(([, spec]) => spec.panel)
    .map(([key, spec]) => {
      const fp8Only = spec.dtypes?.every(isFp8) ?? false;
      const dtypeOff = (dtype: DType) =>
        fp8Only || !spec.dtypes || spec.dtypes.includes(dtype)
          ? undefined
          : `needs dtype ${spec.dtypes.join(' or ')}${spec.dtypeWhy ? ` (${spec.dtypeWhy})` : ''}`;
      const sw: PanelSwitch = { key, label: spec.label ?? key, spec, fp8Only };
      if (spec.choices) sw.choices = spec.choices;
      if (spec.inactive || (spec.dtypes && !fp8Only)) sw.inactive = (v, dtype) => spec.inactive?.(v) ?? dtypeOff(dtype);
      return sw;
    });
}

/** The forward's panel switches the backward does not take: the panel says so instead of sending them. */
export function forwardOnlySwitches(algorithm: string): PanelSwitch[] {
  const backward = passSwitchSpecs(algorithm, 'backward');
  return panelSwitches(algorithm).filter((sw) => !(sw.key in backward));
}

/** The switches group's title: the algorithm as its kernel's authors name it. */
export function panelSwitchTitle(algorithm: string): string {
  return findDescriptor(algorithm)?.title ?? algorithm;
}

/** Why this switch is off for this run (FP8-only on a non-FP8 dtype, or its own condition); undefined when it applies. */
export function switchOff(sw: PanelSwitch, values: SwitchValues, dtype: DType): string | undefined {
  if (sw.fp8Only && !isFp8(dtype)) return 'FP8 runs only: pick fp8e4m3 or fp8e5m2';
  return sw.inactive?.(values, dtype);
}

/**
 * Each of the algorithm's panel switches as the next load runs it: the form's value where it
 * parses, else the loaded run's, else the kernel's default. Unparsed text falls through so
 * the other switches' conditions still see a value; formToRequest reports it.
 */
export function effectiveSwitches(
  algorithm: string,
  set: Record<string, boolean | number | string>,
  loaded: SwitchValues | undefined,
  pass: Pass = 'forward',
): SwitchValues {
  const out: SwitchValues = {};
  for (const sw of panelSwitches(algorithm, pass)) {
    const v = set[sw.key];
    const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
    const mine = typeof v === 'boolean' || typeof v === 'number' ? v : Number.isFinite(n) ? n : undefined;
    out[sw.key] = mine ?? loaded?.[sw.key] ?? sw.spec.default;
  }
  return out;
}

/** The problem panel's form: the problem's fields plus the request's (pass, tiles, inputs, switches). */
export interface ProblemForm extends ProblemFields {
  algorithm: string;
  /** Which pass the debugger steps through: the forward, or the gradients (dO from the seed). */
  pass: Pass;
  blockMode: 'sram' | 'explicit';
  sramBytes: string;
  /** Br and Bc as typed; empty (or "auto"): the algorithm's own tile, which the loaded run's summary shows. */
  blockM: string;
  blockN: string;
  seed: string;
  distribution: InputDistribution;
  outlierRow: string;
  /**
   * The panel's kernel switches (panelSwitches) the person set, by key: booleans as
   * checked, numbers as typed. A switch not here keeps the loaded run's value, or the default.
   */
  switches: Record<string, boolean | string>;
}

export const DEFAULT_FORM: ProblemForm = {
  algorithm: DEFAULT_ALGORITHM,
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
  attentionChunk: '',
  alibi: false,
  softcap: '',
  sink: '',
  maskMod: '',
  scoreMod: '',
  maskAux: '',
  dtype: 'fp32',
  seed: '1',
  distribution: 'normal',
  outlierRow: '',
  switches: {},
};

/** Br and Bc as typed, as a request's tile: an empty side is left to the load, which resolves the algorithm's own once (passBlocks). */
export function tileBlocks(blockM: string, blockN: string): LoadRequest['blocks'] {
  const blocks: LoadRequest['blocks'] = {};
  const m = tileSide('Br', blockM);
  const n = tileSide('Bc', blockN);
  if (m !== undefined) blocks.blockM = m;
  if (n !== undefined) blocks.blockN = n;
  return blocks;
}

/**
 * Br and Bc for an algorithm the person typed no tile for: the exact algorithms' starting tile
 * (their descriptor's `defaults.tile`), else empty, so each load runs the kernel's own tile.
 */
export function startTile(algorithm: string): Pick<ProblemForm, 'blockM' | 'blockN'> {
  const t = findDescriptor(algorithm)?.defaults.tile;
  return t ? { blockM: String(t.blockM), blockN: String(t.blockN) } : { blockM: '', blockN: '' };
}

/**
 * The request a load of this form sends. `applied` is the loaded run: its switches decide the
 * conditions of switches the form does not set (sage's qPerWarp needs version 2, whether the
 * version comes from the form or from the run loaded before).
 */
export function formToRequest(f: ProblemForm, applied?: LoadRequest): LoadRequest {
  const problem = fieldsToProblem(f);
  const blocks = f.blockMode === 'sram' ? { sramBytes: wholeNumber('on-chip memory M', f.sramBytes) } : tileBlocks(f.blockM, f.blockN);
  const req: LoadRequest = { algorithm: f.algorithm, problem, seed: wholeNumber('seed', f.seed, 0), distribution: f.distribution, blocks };
  if (f.pass === 'backward') {
    if (!hasBackward(f.algorithm))
      throw new FieldError(
        'pass',
        `${f.algorithm} has no backward pass in FlashScope; choose Forward, or one of the algorithms that have one`,
      );
    req.pass = 'backward';
  }
  const features = switchFeatures(f, applied?.algorithm === f.algorithm ? applied.features : undefined);
  if (features) req.features = features;
  if (f.distribution === 'outlier-row' && f.outlierRow.trim() !== '') {
    const r = wholeNumber('outlier row', f.outlierRow, 0);
    if (r >= problem.nq) throw new FieldError('outlier row', `must be below nq (${problem.nq}), got ${r}`);
    req.outlierRow = r;
  }
  return req;
}

/**
 * The panel's switches this form sends: those the person set and that apply (FP8-only ones on
 * FP8 runs only, conditional ones when their condition holds with the loaded run's values).
 */
export function switchFeatures(f: ProblemForm, loaded?: SwitchValues): SwitchValues | undefined {
  const out: SwitchValues = {};
  const panel = panelSwitches(f.algorithm, f.pass);
  for (const sw of panel) {
    const v = f.switches[sw.key];
    if (v === undefined || (sw.fp8Only && !isFp8(f.dtype))) continue;
    if (typeof sw.spec.default === 'boolean') {
      if (typeof v !== 'boolean') throw new FieldError(`switches.${sw.key}`, `must be on or off, got "${String(v)}"`);
      out[sw.key] = v;
      continue;
    }
    const t = String(v).trim();
    const n = Number(t);
    if (t === '' || !Number.isFinite(n)) throw new FieldError(`switches.${sw.key}`, `must be a number, got "${String(v)}"`);
    const why = (sw.spec as FeatureSpec<number>).check?.(n);
    if (why) throw new FieldError(`switches.${sw.key}`, why);
    out[sw.key] = n;
  }
  const values = effectiveSwitches(f.algorithm, out, loaded, f.pass);
  for (const sw of panel) if (sw.key in out && switchOff(sw, values, f.dtype)) delete out[sw.key];
  return Object.keys(out).length ? out : undefined;
}

/**
 * The request a load sends: the form's request with the loaded run's other switches kept
 * (those set in the hardware views or the lessons) when the algorithm is the same. The
 * form decides every switch it has; a panel switch that does not apply to the merged run
 * (FP8-only on a 16-bit run, qPerWarp on sage version 1) is dropped.
 */
export function withAppliedFeatures(req: LoadRequest, applied: LoadRequest | undefined): LoadRequest {
  const pass = req.pass ?? 'forward';
  const takes = passSwitchSpecs(req.algorithm, pass);
  // Only the switches this pass takes: FA3's reverseKv, set on a forward, is not the backward's.
  const kept: SwitchValues = {};
  if (applied?.algorithm === req.algorithm) for (const [k, v] of Object.entries(applied.features ?? {})) if (k in takes) kept[k] = v;
  const features = { ...kept, ...req.features };
  const values = { ...effectiveSwitches(req.algorithm, {}, undefined, pass), ...features };
  for (const sw of panelSwitches(req.algorithm, pass)) if (switchOff(sw, values, req.problem.dtype)) delete features[sw.key];
  const out: LoadRequest = { ...req };
  if (Object.keys(features).length) out.features = features;
  else delete out.features;
  return out;
}

/** The form that shows this request, so "Load" there starts from the very request. */
export function requestToForm(r: LoadRequest): ProblemForm {
  const sram = r.blocks.sramBytes !== undefined && r.blocks.blockM === undefined && r.blocks.blockN === undefined;
  return {
    ...DEFAULT_FORM,
    ...problemToFields(r.problem),
    algorithm: r.algorithm,
    pass: r.pass ?? 'forward',
    blockMode: sram ? 'sram' : 'explicit',
    sramBytes: String(r.blocks.sramBytes ?? DEFAULT_FORM.sramBytes),
    blockM: r.blocks.blockM !== undefined ? String(r.blocks.blockM) : sram ? DEFAULT_FORM.blockM : '',
    blockN: r.blocks.blockN !== undefined ? String(r.blocks.blockN) : sram ? DEFAULT_FORM.blockN : '',
    seed: String(r.seed),
    distribution: r.distribution,
    outlierRow: r.outlierRow !== undefined ? String(r.outlierRow) : '',
  };
}
