// The subgroup-matrix backward's benchmark studies: ablations that compute wrong gradients on
// purpose, to measure what one part of the shipped kernel costs. Each is an edit of the shipped
// kernel's WGSL (webgpu/backward-matrix-kernel.ts bwdmMainWgsl), so the generator holds only the
// kernel FlashScope runs; an edit whose anchor is gone throws rather than time the wrong thing.
// The cut code stays behind a switch that is false at run time (params' pad0 is 0), so its
// bindings stay and the kernel's layout does not change.

import type { MatrixBackwardPrefs } from '../webgpu/backward-matrix-kernel.ts';

/**
 * no-atomics: leave out the dQ adds; no-dq: the whole dQ step; no-f: all of step F; store-adds:
 * plain atomic stores instead of adds (the read-modify-write or the traffic?); no-bar3: the
 * barrier between step B and step D left out (a race: what the handoff inside a subgroup costs).
 */
export const BACKWARD_STUDIES = ['no-atomics', 'no-dq', 'no-f', 'store-adds', 'no-bar3'] as const;
export type BackwardStudy = (typeof BACKWARD_STUDIES)[number];

function edit(wgsl: string, study: BackwardStudy, anchor: RegExp, to: string): string {
  const g = new RegExp(anchor.source, 'g');
  if (!g.test(wgsl))
    throw new Error(`backward study ${study}: the shipped kernel no longer has ${anchor}; update engine/bench/backward-studies.ts`);
  return wgsl.replace(g, to);
}

/** The shipped main kernel's WGSL with one study applied. */
export function backwardStudyWgsl(shipped: string, study: BackwardStudy): string {
  let w = edit(
    shipped,
    study,
    /(\n {2}let w = [^;\n]+;\n)/,
    '$1  // Study switch: false at run time (pad0 is 0), so the code it cuts and its bindings stay.\n  let OFF = prm.pad0 == 7u;\n',
  );
  if (study === 'no-atomics' || study === 'no-dq' || study === 'no-f')
    w = edit(w, study, /if \(pending\) \{ add_dq\(/, 'if (pending && OFF) { add_dq(');
  if (study === 'no-dq' || study === 'no-f') w = edit(w, study, /if \(blk < (\d+)u\) \{/, 'if (blk < $1u && OFF) {');
  if (study === 'no-f')
    w = edit(
      w,
      study,
      /for \(var kb = 0u; kb < BM; kb \+= T\) \{\n(\s+)let pl = /,
      'for (var kb = 0u; kb < select(0u, BM, OFF); kb += T) {\n$1let pl = ',
    );
  if (study === 'store-adds') w = edit(w, study, /atomicAdd\(&dqacc\[/, 'atomicStore(&dqacc[');
  if (study === 'no-bar3')
    w = edit(w, study, /workgroupBarrier\(\);( {12}\/\/ Sᵀ, dPᵀ stripes visible)/, 'if (OFF) { workgroupBarrier(); }$1');
  return w;
}

/** A flash-matrix tile as --bwd-prefs names it: the kernel's preferences, and at most one study. */
export type BenchBackwardPrefs = MatrixBackwardPrefs & { study?: BackwardStudy };

/** The preferences BackwardRun takes: a named study becomes its edit of the main kernel. */
export function studyPrefs({ study, ...prefs }: BenchBackwardPrefs): MatrixBackwardPrefs {
  if (study === undefined) return prefs;
  if (!BACKWARD_STUDIES.includes(study)) throw new Error(`unknown backward study "${study}"; one of ${BACKWARD_STUDIES.join(', ')}`);
  return { ...prefs, rewriteMain: (wgsl) => backwardStudyWgsl(wgsl, study) };
}
