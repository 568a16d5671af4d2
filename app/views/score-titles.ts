// What the S and P heatmaps hold, in words: most algorithms keep scores as natural-unit
// logits and P = exp(S − m); fa4 and sage keep S and m in log2 units (the logit times log₂e,
// so the exponential is one exp2 instruction), and their P = 2^(S − m). Both give the same
// probability weights, but the S values of a base-2 run are log₂e ≈ 1.443 times larger, so
// a title that says τ·QKᵀ would misstate every number under it.

import { findDescriptor } from '../../engine/api.ts';

export interface ScoreTitles {
  s: string;
  p: string;
  /** One sentence for the view's hint, present for base-2 runs. */
  note?: string;
}

export function scoreTitles(algorithm: string, base2: boolean): ScoreTitles {
  if (base2) {
    return {
      s: 'S = τ·log₂e·QKᵀ (log₂ units)',
      p: 'P = 2^(S − m)',
      note: 'S and m are in log₂ units (the logit times log₂e ≈ 1.443), so P = 2^(S − m) equals exp of the same difference in natural units.',
    };
  }
  const home = findDescriptor(algorithm)?.rowStats;
  // Unfused attention's P is the normalized matrix; FA1's is exp against the running max m̃ it keeps in HBM.
  if (home === 'materialized') return { s: 'S = τ·QKᵀ', p: 'P' };
  if (home === 'hbm') return { s: 'S = τ·QKᵀ', p: 'P̃ = exp(S − m̃)' };
  return { s: 'S = τ·QKᵀ', p: 'P = exp(S − m)' };
}
