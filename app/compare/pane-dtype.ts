// Which input precision a compare pane runs, and what to do when its algorithm cannot run
// it. A pane may override the shared problem's dtype (FP16 FA3 next to FP8 FA3 on the same
// draws); a pane the engine would refuse because of its low-precision dtype is not loaded
// at all: it says why and offers one-click fixes instead of a failed load.
//
// The descriptors' declarations are the one source of truth (engine/refusal.ts, which the
// problem panel asks too): a pane is refused for its dtype when its problem is refused at
// that dtype but accepted at a 16-bit one, and an FP8-only feature is a switch whose spec
// names FP8 dtypes only. A new FP8 path needs no change here.

import {
  ALGORITHMS,
  findDescriptor,
  refusalOf,
  type Refusal,
  isFp8,
  type AttentionProblem,
  type DType,
  type Pass,
  type LoadRequest,
} from '../../engine/api.ts';
import type { ProblemForm } from '../store/problem-form.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import { panelSwitches, effectiveSwitches } from '../store/problem-form.ts';

/** The dtype a pane runs: its own, or the shared problem's when it has none. */
export function paneDtype(c: ComparePaneConfig, shared: DType): DType {
  return c.dtype ?? shared;
}

/** The 16-bit dtype a refused pane falls back to: the shared one when it is not FP8, else fp16 (every algorithm takes it). */
export function fallbackDtype(shared: DType): DType {
  return isFp8(shared) ? 'fp16' : shared;
}

/** Whether `key` is one of `algorithm`'s FP8-only switches, as its spec declares (FA3's blockQuant, incoherent, pScale, seed). */
export function isFp8OnlyFeature(algorithm: string, key: string): boolean {
  const dtypes = findDescriptor(algorithm)?.switches[key]?.dtypes;
  return dtypes?.every(isFp8) ?? false;
}

/**
 * The pane's features that its dtype uses: FP8-only switches are kept in the config but not
 * sent with a 16-bit dtype (the engine refuses them there), and likewise a switch whose
 * condition on the others fails (sage's qPerWarp on version 1; panelSwitches says which).
 */
export function featuresFor(algorithm: string, dtype: DType, features: Record<string, boolean | number>): Record<string, boolean | number> {
  const off = inactiveSwitches(algorithm, dtype, features);
  return Object.fromEntries(
    Object.entries(features).filter(([k]) => (isFp8(dtype) || !isFp8OnlyFeature(algorithm, k)) && !off.includes(k)),
  );
}

/** The switches of this algorithm whose condition fails with these features (defaults for the rest) and this dtype. */
export function inactiveSwitches(algorithm: string, dtype: DType, features: Record<string, boolean | number>): string[] {
  const panel = panelSwitches(algorithm).filter((sw) => sw.inactive);
  if (panel.length === 0) return [];
  const values = effectiveSwitches(algorithm, features, undefined);
  return panel.filter((sw) => sw.inactive?.(values, dtype)).map((sw) => sw.key);
}

/** The dtype a pane's request carries: tensors from files keep the files' dtype (the import decides it), so a pane's own dtype applies to random inputs only. */
export function requestDtype(c: ComparePaneConfig, shared: LoadRequest): DType {
  return shared.tensors ? shared.problem.dtype : paneDtype(c, shared.problem.dtype);
}

/**
 * The engine's refusal of a pane over the shared problem as loaded, when it is the pane's
 * low-precision dtype at fault (the same pane runs at the 16-bit fallback); undefined when
 * it runs, before the shared problem exists, or when the refusal has another cause (that
 * one is the load's own error, shown as for any pane).
 */
export function paneRefusalOf(c: ComparePaneConfig, shared: LoadRequest | undefined): Refusal | undefined {
  if (!shared) return undefined;
  const dtype = requestDtype(c, shared);
  if (!isFp8(dtype)) return undefined;
  const pass = shared.pass ?? 'forward';
  const r = refusalOf(c.algorithm, pass, { ...shared.problem, dtype }, featuresFor(c.algorithm, dtype, c.features));
  if (!r) return undefined;
  const low = fallbackDtype(shared.problem.dtype);
  return refusalOf(c.algorithm, pass, { ...shared.problem, dtype: low }, featuresFor(c.algorithm, low, c.features)) ? undefined : r;
}

/** The message of paneRefusalOf, as one sentence. */
export function paneRefusal(c: ComparePaneConfig, shared: LoadRequest | undefined): string | undefined {
  const r = paneRefusalOf(c, shared);
  return r && `${r.message}.`;
}

/** A change to the shared problem (the Debugger tab's form and the loaded request's problem) that every pane then reloads with. */
export interface SharedPatch {
  form: Partial<ProblemForm>;
  problem: Partial<AttentionProblem>;
}

export interface DtypeFix {
  label: string;
  /** A change to this pane only. */
  patch?: Partial<ComparePaneConfig>;
  /** A change to the shared problem (ALiBi, sinks, d ≠ dv, which FP8 paths lack): every pane reloads. */
  shared?: SharedPatch;
}

/**
 * One-click ways out of a pane's refusal, those that keep its dtype first: move the pane to
 * an algorithm whose forward runs this problem at this dtype, or drop the shared problem's
 * modifier the FP8 path lacks; then run the pane at the 16-bit fallback.
 */
export function dtypeFixes(c: ComparePaneConfig, shared: LoadRequest): DtypeFix[] {
  const r = paneRefusalOf(c, shared);
  if (!r) return [];
  const dtype = requestDtype(c, shared);
  const pass: Pass = shared.pass ?? 'forward';
  const p = shared.problem;
  const fixes: DtypeFix[] = [];
  if (r.field === 'dtype' && pass === 'forward') {
    for (const a of ALGORITHMS) {
      if (a.id !== c.algorithm && refusalOf(a.id, 'forward', { ...p, dtype }) === null)
        fixes.push({ label: `Switch this pane to ${a.id} (keeps ${dtype})`, patch: { algorithm: a.id, features: {} } });
    }
  } else if (r.field === 'alibi')
    fixes.push({ label: 'Turn ALiBi off in the shared problem', shared: { form: { alibi: false }, problem: { alibi: undefined } } });
  else if (r.field === 'sinks')
    fixes.push({ label: 'Clear the shared sink logit', shared: { form: { sink: '' }, problem: { sinks: undefined } } });
  else if (r.field === 'dv')
    fixes.push({ label: `Set the shared dv to d (${p.d})`, shared: { form: { dv: String(p.d) }, problem: { dv: p.d } } });
  const low = fallbackDtype(p.dtype);
  fixes.push({ label: `Run this pane in ${low}`, patch: { dtype: low === p.dtype ? undefined : low } });
  return fixes;
}
