// Which input precision a compare pane runs, and what to do when its algorithm cannot run
// it. A pane may override the shared problem's dtype (FP16 FA3 next to FP8 FA3 on the same
// draws); a kernel without an FP8 path is not loaded at all with an FP8 dtype: the pane says
// why and offers the one-click fixes instead of a failed load.

import { isFp8, type DType } from '../../engine/problem.ts';
import type { Pass } from '../../engine/debugger/pass.ts';
import type { LoadRequest } from '../../engine/debugger/protocol.ts';
import { FA3_FP8_FEATURES } from '../../engine/lowprec/fa3-fp8.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import { PANEL_SWITCHES, effectiveSwitches } from '../store/problem-form.ts';

/**
 * The algorithms whose forward has an FP8 path in the engine (the others call requireNoFp8),
 * with the features that only mean something on that path. pane-dtype.test.ts checks this
 * table against the engine itself, so it cannot drift.
 */
export const FP8_PATHS: Record<string, { name: string; fp8Features: readonly string[] }> = {
  fa3: { name: "FA3's FP8 forward", fp8Features: Object.keys(FA3_FP8_FEATURES) },
};

/** Algorithms that choose their own low precision inside (and so take 16- or 32-bit tensors): what they do instead. */
const OWN_PRECISION: Record<string, string> = {
  sage: 'sage quantizes its own inputs (INT8 Q·Kᵀ; FP16 P·V in version 1, FP8 in version 2) and takes fp16, bf16 or fp32 tensors',
};

/** The dtype a pane runs: its own, or the shared problem's when it has none. */
export function paneDtype(c: ComparePaneConfig, shared: DType): DType {
  return c.dtype ?? shared;
}

/** Why this algorithm cannot run this dtype in this pass; undefined when it can. */
export function dtypeRefusal(algorithm: string, dtype: DType, pass: Pass = 'forward'): string | undefined {
  if (!isFp8(dtype)) return undefined;
  const path = FP8_PATHS[algorithm];
  if (!path && OWN_PRECISION[algorithm]) return `${OWN_PRECISION[algorithm]}, so it cannot run ${dtype} inputs. Use its version switch for FP8 P·V.`;
  if (!path) return `${algorithm} has no FP8 path, so it cannot run ${dtype}. FP8 runs on ${Object.keys(FP8_PATHS).join(', ')} only.`;
  if (pass === 'backward') return `${dtype} runs on ${path.name} only; the backward pass has no FP8 path.`;
  return undefined;
}

export interface DtypeFix {
  label: string;
  patch: Partial<ComparePaneConfig>;
}

/** One-click ways out of a refusal: run the pane in a 16-bit dtype, or move it to an algorithm with an FP8 path. */
export function dtypeFixes(algorithm: string, dtype: DType, pass: Pass, shared: DType): DtypeFix[] {
  if (!dtypeRefusal(algorithm, dtype, pass)) return [];
  // The shared dtype when it is one the pane can run, else fp16 (every algorithm takes it).
  const fallback: DType = isFp8(shared) ? 'fp16' : shared;
  const fixes: DtypeFix[] = [{ label: `Run this pane in ${fallback}`, patch: { dtype: fallback === shared ? undefined : fallback } }];
  if (pass !== 'backward') {
    for (const id of Object.keys(FP8_PATHS)) if (id !== algorithm) fixes.push({ label: `Switch this pane to ${id} (keeps ${dtype})`, patch: { algorithm: id, features: {} } });
  }
  return fixes;
}

/**
 * The pane's features that its dtype uses: FP8-only switches are kept in the config but not
 * sent with a 16-bit dtype (the engine refuses them there), and likewise a switch whose
 * condition on the others fails (sage's qPerWarp on version 1; PANEL_SWITCHES says which).
 */
export function featuresFor(algorithm: string, dtype: DType, features: Record<string, boolean | number>): Record<string, boolean | number> {
  const fp8Only = FP8_PATHS[algorithm]?.fp8Features ?? [];
  const off = inactiveSwitches(algorithm, dtype, features);
  return Object.fromEntries(Object.entries(features).filter(([k]) => (isFp8(dtype) || !fp8Only.includes(k)) && !off.includes(k)));
}

/** The switches of this algorithm whose condition fails with these features (defaults for the rest) and this dtype. */
export function inactiveSwitches(algorithm: string, dtype: DType, features: Record<string, boolean | number>): string[] {
  const panel = (PANEL_SWITCHES[algorithm] ?? []).filter((sw) => sw.inactive);
  if (panel.length === 0) return [];
  const values = effectiveSwitches(algorithm, features, undefined);
  return panel.filter((sw) => sw.inactive?.(values, dtype)).map((sw) => sw.key);
}

/** The refusal of a pane over the shared problem as loaded (none before the shared problem exists). */
export function paneRefusal(c: ComparePaneConfig, shared: LoadRequest | undefined): string | undefined {
  if (!shared) return undefined;
  return dtypeRefusal(c.algorithm, requestDtype(c, shared), shared.pass ?? 'forward');
}

/** The dtype a pane's request carries: tensors from files keep the files' dtype (the import decides it), so a pane's own dtype applies to random inputs only. */
export function requestDtype(c: ComparePaneConfig, shared: LoadRequest): DType {
  return shared.tensors ? shared.problem.dtype : paneDtype(c, shared.problem.dtype);
}
