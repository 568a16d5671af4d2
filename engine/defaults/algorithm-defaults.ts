// The configuration each algorithm starts from when someone picks it: the GPU its kernel was
// written for, a dtype its tensor cores take, the kernel's own tile for the head dimension,
// and a problem small enough to step through in seconds. One table, read by the debugger's
// problem panel, the compare panes, the lessons and the tests alike.
//
// What "fits" is never restated here: the hardware model (engine/hw/) decides, through the
// resource sheet describeFor() builds. The table only says where each algorithm starts.

import { BUILT_IN_ALGORITHMS, descriptorOf, type AlgorithmId } from '../algorithms/registry.ts';
import type { AlgorithmDefaults } from '../algorithms/descriptor.ts';
import { DTYPES, type AttentionProblem, type DType, type ProblemDims } from '../core/problem.ts';
import { gpuById, type GpuId } from '../hw/gpus/index.ts';
import { describeFor, hasSchedule, hwAlgorithmById } from '../algorithms/schedule-registry.ts';
import type { ProblemShape } from '../hw/model.ts';

/** The problem's masks and logit transform: never set by an algorithm's choice, but they move the kernel's tile and what fits. */
export type ProblemMasks = Partial<Pick<AttentionProblem, 'causal' | 'window' | 'attentionChunk' | 'softcap' | 'mask'>>;

/** The fields of a problem form that an algorithm's choice may set, with the masks of the problem they apply to. */
export interface WorkingConfig extends ProblemDims, ProblemMasks {
  /** Tile of the numeric trace (Br × Bc). */
  blockM: number;
  blockN: number;
  dtype: DType;
  /** GPU of the hardware views; null for algorithms without a hardware model. */
  gpu: GpuId | null;
}

/** The fields an algorithm's choice sets (the masks are the problem's own). */
export type ConfigField = Exclude<keyof WorkingConfig, keyof ProblemMasks>;

export const CONFIG_FIELDS: readonly ConfigField[] = ['batch', 'hq', 'hk', 'nq', 'nk', 'd', 'dv', 'blockM', 'blockN', 'dtype', 'gpu'];

/**
 * Where each built-in algorithm starts, from its descriptor (engine/algorithms/<id>/descriptor.ts).
 * The exact algorithms (standard, FA1, FA2) run in fp32 on a 64 × 64 problem with 16 × 16
 * tiles, so every tile is a few pixels wide and the running statistics change often. The
 * hardware kernels take 16-bit inputs (their MMAs have no fp32 path); their problems hold a few
 * of the kernel's own tiles each way: FA4's CTA covers 2 × 128 query rows, so 512 rows give two
 * CTAs and four K/V blocks, enough for the Large-Small-Large rotation to come round.
 * Flash-decoding decodes one query row against a long cache, split across CTAs. SageAttention
 * takes 16-bit inputs and quantizes them itself. All of these load in a few seconds (about 100
 * to 300 steps).
 */
export const ALGORITHM_DEFAULTS: Readonly<Record<AlgorithmId, AlgorithmDefaults>> = Object.fromEntries(
  Object.values(BUILT_IN_ALGORITHMS).map((d) => [d.id, d.defaults]),
) as Record<AlgorithmId, AlgorithmDefaults>;

const SHARED = { batch: 1, hq: 1, hk: 1 };

function tableOf(algo: string): AlgorithmDefaults {
  return descriptorOf(algo).defaults;
}

/** The algorithm's starting configuration, nothing the person typed considered. */
export function baseConfig(algo: string): WorkingConfig {
  const t = tableOf(algo);
  const c: WorkingConfig = { ...SHARED, nq: t.nq, nk: t.nk, d: t.d, dv: t.dv, blockM: 0, blockN: 0, dtype: t.dtype, gpu: t.gpu };
  return { ...c, ...tilesFor(algo, c) };
}

export function hasKernel(algo: string): boolean {
  return tableOf(algo).gpu !== null;
}

/** The masks of a config, as the problem has them (a window with both sides negative is none). */
function masksOf(c: ProblemMasks): ProblemMasks {
  return {
    ...(c.causal ? { causal: true } : {}),
    ...(c.window && (c.window.left >= 0 || c.window.right >= 0) ? { window: { ...c.window } } : {}),
    ...(c.attentionChunk !== undefined ? { attentionChunk: c.attentionChunk } : {}),
    ...(c.softcap !== undefined ? { softcap: c.softcap } : {}),
    ...(c.mask?.maskMod !== undefined ? { mask: c.mask } : {}),
  };
}

/** The problem the hardware model is asked about: the config's sizes and dtype, with the problem's masks. */
function shapeOf(c: WorkingConfig): ProblemShape {
  return { batch: c.batch, hq: c.hq, hk: c.hk, nq: c.nq, nk: c.nk, d: c.d, dv: c.dv, dtype: c.dtype, causal: false, ...masksOf(c) };
}

/**
 * Why the hardware model cannot schedule this configuration (the resource sheet's
 * does_not_fit lines, or the architecture mismatch), empty when it can. Algorithms without a
 * hardware model always fit.
 */
export function misfits(algo: string, c: WorkingConfig): string[] {
  if (!hasKernel(algo) || c.gpu === null) return [];
  const gpu = gpuById(c.gpu);
  const hw = hwAlgorithmById(algo);
  if (!hw.arch.includes(gpu.sm)) return [`arch: ${algo} is written for SM${hw.arch.join('/SM')}; ${gpu.name} is SM${gpu.sm}`];
  return describeFor(algo, c.gpu, shapeOf(c)).does_not_fit;
}

/** The kernel's tile for this head dimension (its resource sheet), or the table's tile. */
export function tilesFor(algo: string, c: WorkingConfig): { blockM: number; blockN: number } {
  const t = tableOf(algo);
  if (t.gpu === null) return descriptorOf(algo).tiles(shapeOf(c));
  if (c.gpu === null) return { blockM: 16, blockN: 16 };
  let gpu = c.gpu;
  if (misfits(algo, c).some((l) => l.startsWith('arch:'))) gpu = t.gpu as GpuId;
  const sheet = describeFor(algo, gpu, shapeOf({ ...c, dtype: c.dtype === 'fp32' ? t.dtype : c.dtype }));
  return { blockM: sheet.tiles.block_m, blockN: sheet.tiles.block_n };
}

/** A value the person had that the algorithm's choice replaced, and why. */
export interface Replaced {
  field: ConfigField;
  from: string;
  to: string;
  why: string;
}

export interface Defaults {
  config: WorkingConfig;
  replaced: Replaced[];
}

const show = (v: unknown) => String(v);

/**
 * The configuration an algorithm's choice brings. Fields the person set themselves
 * (`touched`) keep their value where it still fits; every other field takes the algorithm's
 * starting value, and the tiles follow the kernel for the head dimension that results.
 * A touched value that the hardware model cannot schedule is replaced, and listed in
 * `replaced` with the model's reason.
 */
export function defaultsFor(algo: string, current: Partial<WorkingConfig>, touched: Iterable<ConfigField>): Defaults {
  const t = tableOf(algo);
  const mine = new Set(touched);
  const base = baseConfig(algo);
  const c: WorkingConfig = { ...base, ...masksOf(current) };
  for (const f of mine) {
    const v = current[f];
    if (v === undefined) continue;
    if (f === 'gpu') {
      // Only a GPU with the kernel's architecture is kept; the table's otherwise.
      if (t.gpu !== null && v !== null && misfits(algo, { ...base, gpu: v as GpuId }).every((l) => !l.startsWith('arch:')))
        c.gpu = v as GpuId;
      continue;
    }
    if (f === 'dtype' ? (DTYPES as readonly string[]).includes(v as string) : Number.isInteger(v) && (v as number) > 0)
      (c as unknown as Record<string, unknown>)[f] = v;
  }
  const replaced: Replaced[] = [];
  const replace = (field: ConfigField, to: WorkingConfig[ConfigField], why: string) => {
    if (c[field] === to) return;
    if (mine.has(field)) replaced.push({ field, from: show(c[field]), to: show(to), why });
    (c as unknown as Record<string, unknown>)[field] = to;
  };
  if (mine.has('gpu') && current.gpu && c.gpu !== current.gpu && t.gpu !== null) {
    replaced.push({
      field: 'gpu',
      from: show(current.gpu),
      to: show(c.gpu),
      why: misfits(algo, { ...base, gpu: current.gpu as GpuId })[0] ?? '',
    });
  }
  // Repair what the hardware model refuses, the person's own values last.
  let lines = misfits(algo, c);
  const dtypeLine = lines.find((l) => l.startsWith('dtype:'));
  if (dtypeLine) {
    replace('dtype', t.dtype, dtypeLine.slice(7));
    lines = misfits(algo, c);
  }
  if (lines.length > 0 && (c.d !== base.d || c.dv !== base.dv)) {
    const why = lines.join('; ');
    const fix = headDimFix(algo, c);
    replace('d', fix.d, why);
    replace('dv', fix.dv, why);
  }
  const tiles = tilesFor(algo, c);
  if (!mine.has('blockM')) c.blockM = tiles.blockM;
  if (!mine.has('blockN')) c.blockN = tiles.blockN;
  return { config: c, replaced };
}

/** Head dims the kernels are built for, largest first. */
const HEAD_DIMS = [256, 192, 128, 96, 64, 32];

/**
 * The nearest head dims the model schedules, neither above the person's: the largest d
 * first, and for it the largest dv (FA4 takes d = 192 only with dv = 128); the table's pair
 * when nothing fits.
 */
export function headDimFix(algo: string, c: WorkingConfig): { d: number; dv: number } {
  const fits = (d: number, dv: number) => misfits(algo, { ...c, d, dv }).length === 0;
  if (fits(c.d, c.dv)) return { d: c.d, dv: c.dv };
  for (const d of [c.d, ...HEAD_DIMS.filter((x) => x < c.d)]) {
    for (const dv of [c.dv, ...HEAD_DIMS.filter((x) => x < c.dv)]) if (fits(d, dv)) return { d, dv };
  }
  const b = baseConfig(algo);
  return { d: b.d, dv: b.dv };
}

/**
 * What to change so the hardware model can schedule this problem, everything in it taken as
 * the person's own choice: the same repairs defaultsFor makes (the kernel's dtype, its GPU,
 * the nearest head dims it takes). Empty when it fits or when no field of the form is at
 * fault (a feature switch, for instance).
 */
export function scheduleFix(algo: string, c: WorkingConfig): Replaced[] {
  if (misfits(algo, c).length === 0) return [];
  const { config, replaced } = defaultsFor(algo, c, CONFIG_FIELDS);
  return misfits(algo, config).length === 0 ? replaced.filter((r) => r.field !== 'blockM' && r.field !== 'blockN') : [];
}

/** "set dtype to bf16 and d to 128": the changes in one phrase. */
export function fixPhrase(changes: readonly Replaced[]): string {
  const parts = changes.map((r) => `${r.field === 'gpu' ? 'GPU' : r.field} to ${r.to}`);
  return parts.length === 0 ? '' : `set ${parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}` : parts[0]}`;
}

/** Whether the backward kernel's model schedules this problem in `dtype` on its own GPU. */
function backwardFits(algo: string, c: Omit<WorkingConfig, 'gpu'>, dtype: DType): boolean {
  const gpu = descriptorOf(algo).backwardGpu;
  if (!gpu || !hasSchedule(algo, 'backward')) return true;
  return describeFor(algo, gpu, shapeOf({ ...c, dtype, gpu }), {}, 'backward').does_not_fit.length === 0;
}

/**
 * The dtype a change of pass leaves in the form. The person's own choice stays (the hardware
 * views then say what to change); an untouched one the backward kernel refuses becomes the
 * backward's starting dtype, and that one goes back to the forward's on the way back.
 */
export function dtypeForPass(algo: string, pass: 'forward' | 'backward', c: Omit<WorkingConfig, 'gpu'>, touched: boolean): DType {
  const own = descriptorOf(algo).backwardDtype;
  if (touched || !own) return c.dtype;
  const forward = tableOf(algo).dtype;
  if (pass === 'backward') return backwardFits(algo, c, c.dtype) || !backwardFits(algo, c, own) ? c.dtype : own;
  return c.dtype === own ? forward : c.dtype;
}
