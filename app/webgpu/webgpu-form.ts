// The WebGPU panel's form: the problem's fields as typed, the benchmark presets, and the
// problem and shape they describe (through the engine's one fields → problem conversion).

import {
  fieldsToProblem,
  validateProblem,
  type AttentionProblem,
  type ProblemFields,
  type WebGpuField,
  type WebGpuPath,
  type WebGpuShape,
} from '../../engine/api.ts';

/** The problem's fields (full-size runs are fp32 without sinks or an attention chunk), the inputs' seed, and whether a mask_mod runs block-sparse. */
export type Form = Omit<ProblemFields, 'dtype' | 'sink' | 'attentionChunk'> & { seed: string; blockSparse: boolean };

/** No mask, no score modifier: what a preset leaves in the form besides its shape. */
export const NO_MODIFIERS = {
  causal: false,
  windowLeft: '',
  windowRight: '',
  alibi: false,
  softcap: '',
  maskMod: '',
  scoreMod: '',
  maskAux: '',
  blockSparse: false,
} satisfies Partial<Form>;

export const FULL: Form = { batch: '4', hq: '16', hk: '16', nq: '4096', nk: '4096', d: '64', dv: '64', ...NO_MODIFIERS, seed: '1' };

/**
 * The shapes BENCHMARKS.md reports, one click away: a preset fills the problem fields (no
 * masks or modifiers) and, for the decoding shapes, picks the flash-decoding kernel.
 */
/** A benchmark shape: its form fields and, where it names one, its kernel path. */
export type Preset = { name: string; form: Partial<Form>; path?: WebGpuPath };

export const PRESETS: Preset[] = [
  { name: 'benchmark headline: B=4 H=16 N=4096 d=64', form: { batch: '4', hq: '16', hk: '16', nq: '4096', nk: '4096', d: '64', dv: '64' } },
  {
    name: 'long context: B=4 H=16 N=65536 d=128 (windows of batches)',
    form: { batch: '4', hq: '16', hk: '16', nq: '65536', nk: '65536', d: '128', dv: '128' },
  },
  {
    name: 'one batch of 128 heads: B=1 H=128 N=65536 d=64 (windows of heads)',
    form: { batch: '1', hq: '128', hk: '128', nq: '65536', nk: '65536', d: '64', dv: '64' },
  },
  {
    name: 'decoding: B=4 H=16 Nq=1 Nk=32768 d=128',
    form: { batch: '4', hq: '16', hk: '16', nq: '1', nk: '32768', d: '128', dv: '128' },
    path: 'decode',
  },
  {
    name: 'GQA decoding: B=1 Hq=32 Hk=8 Nq=1 Nk=131072 d=128',
    form: { batch: '1', hq: '32', hk: '8', nq: '1', nk: '131072', d: '128', dv: '128' },
    path: 'decode',
  },
];

export function toProblem(f: Form): AttentionProblem {
  return validateProblem(fieldsToProblem({ ...f, dtype: 'fp32', sink: '', attentionChunk: '' }));
}

export const SHAPE_FIELDS: readonly WebGpuField[] = ['batch', 'hq', 'hk', 'nq', 'nk', 'd', 'dv'];

/** The form's shape fields that parse as positive integers. */
export function shapeOf(f: Form): Partial<WebGpuShape> {
  const s: Partial<WebGpuShape> = {};
  for (const k of SHAPE_FIELDS) if (/^\d+$/.test(f[k].trim()) && Number(f[k]) > 0) s[k] = Number(f[k]);
  return s;
}
