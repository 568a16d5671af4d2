// --mask-mod / --score-mod: mask language text or a preset name (`sliding_window:256`,
// `document:100,200`), turned into the problem's one mask field.

import { blockMask } from '../core/block-mask.ts';
import { MASK_PRESETS, maskSpecFrom, type PresetDims } from '../core/mask-presets.ts';
import type { MaskSpec } from '../core/mask-spec.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { ArgsError } from './args.ts';

const presetList = (kind: string) =>
  MASK_PRESETS.filter((p) => p.kind === kind)
    .map((p) => (p.params.length ? `${p.id}:${p.params.map((q) => q.name).join(',')}` : p.id))
    .join(', ');

export const MASK_HELP = `masks (FlexAttention's mask_mod / score_mod, one expression each):
  --mask-mod TEXT|PRESET      true keeps key kv_idx for query q_idx; names b, h, q_idx, kv_idx,
                              nq, nk; e.g. 'kv_idx <= q_idx && q_idx - kv_idx < 64'
                              presets: ${presetList('mask_mod')}
  --score-mod TEXT|PRESET     the new score from score (already scaled), e.g. 'score - abs(q_idx - kv_idx)'
                              presets: ${presetList('score_mod')}`;

/** The mask field from the two flags (undefined when neither is given). */
export function maskFromFlags(maskMod: string | undefined, scoreMod: string | undefined, d: PresetDims): MaskSpec | undefined {
  if (maskMod === undefined && scoreMod === undefined) return undefined;
  try {
    return maskSpecFrom({ maskMod, scoreMod }, d);
  } catch (e) {
    throw new ArgsError(`--mask-mod/--score-mod: ${(e as Error).message}`);
  }
}

/** The block mask of a problem at a tile size, as the JSON the CLI prints. */
export function blockMaskSummary(p: AttentionProblem, blockM: number, blockN: number): Record<string, number> {
  const bm = blockMask(p, blockM, blockN);
  return {
    block_m: blockM,
    block_n: blockN,
    density: bm.density,
    empty: bm.counts.empty,
    partial: bm.counts.partial,
    full: bm.counts.full,
    skipped_flops: bm.skippedFlops,
    skipped_bytes: bm.skippedBytes,
  };
}
