// What each compare pane chooses for itself: algorithm, input dtype, tile sizes and the
// kernel features its algorithm has. Everything else (shapes, masks, seed and input
// distribution or imported tensors) is the shared problem, so panes differ only where the
// person asked them to.

import { FA3_FEATURES } from '../../engine/algorithms/fa3/forward.ts';
import { FA4_FEATURES } from '../../engine/algorithms/fa4/forward.ts';
import { FLASH_DECODING_FEATURES } from '../../engine/algorithms/flash-decoding/forward.ts';
import { FMHA_V2_FEATURES } from '../../engine/algorithms/fmha-v2/forward.ts';
import { SAGE_FEATURES } from '../../engine/algorithms/sage/forward.ts';
import type { FeatureSpecs } from '../../engine/algorithms/features.ts';
import type { DType } from '../../engine/core/problem.ts';

export interface ComparePaneConfig {
  algorithm: string;
  /** Absent: the shared problem's dtype. FP8 runs only where the algorithm has an FP8 path (pane-dtype.ts). */
  dtype?: DType;
  /** Empty: the algorithm's own default tile. */
  blockM: string;
  blockN: string;
  /** Only the features that differ from the algorithm's defaults. */
  features: Record<string, boolean | number>;
  views: string[];
}

export const FEATURE_SPECS: Record<string, FeatureSpecs> = {
  fa3: FA3_FEATURES,
  fa4: FA4_FEATURES,
  'fmha-v2': FMHA_V2_FEATURES,
  'flash-decoding': FLASH_DECODING_FEATURES,
  sage: SAGE_FEATURES,
};

export const MIN_PANES = 2;
export const MAX_PANES = 4;
export const COMPARE_VIEWS_DEFAULT = ['heatmaps', 'counters'];

export const DEFAULT_PANES: ComparePaneConfig[] = [
  { algorithm: 'fa1', blockM: '16', blockN: '16', features: {}, views: [...COMPARE_VIEWS_DEFAULT] },
  { algorithm: 'fa2', blockM: '16', blockN: '16', features: {}, views: [...COMPARE_VIEWS_DEFAULT] },
];

/** A pane config's label in tables: algorithm, its own dtype, tile, changed features. */
export function paneLabel(c: ComparePaneConfig, index: number): string {
  const tile = c.blockM || c.blockN ? ` ${c.blockM || 'auto'}×${c.blockN || 'auto'}` : '';
  const feats = Object.entries(c.features)
    .map(([k, v]) => (typeof v === 'boolean' ? `${v ? '+' : '−'}${k}` : `${k}=${v}`))
    .join(' ');
  return `${index + 1}: ${c.algorithm}${c.dtype ? ` ${c.dtype}` : ''}${tile}${feats ? ` ${feats}` : ''}`;
}

export const comparePaneId = (i: number) => `cmp${i}`;
