// What each compare pane chooses for itself: algorithm, input dtype, tile sizes and the
// kernel features its algorithm has. Everything else (shapes, masks, seed and input
// distribution or imported tensors) is the shared problem, so panes differ only where the
// person asked them to.

import { type FeatureSpecs, DEFAULT_COMPARISON, findDescriptor, type DType } from '../../engine/api.ts';
import { startTile } from '../store/problem-form.ts';

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
  /** This pane's mask_mod (text or preset) in place of the shared problem's; absent: the shared one. */
  maskMod?: string;
}

/** The switches a pane offers: its algorithm's forward ones, or its backward's when the shared problem runs the backward. */
export function paneSwitchSpecs(algorithm: string, backward = false): FeatureSpecs {
  const d = findDescriptor(algorithm);
  return (backward ? d?.backward?.switches : d?.switches) ?? {};
}

export const MIN_PANES = 2;
export const MAX_PANES = 4;
export const COMPARE_VIEWS_DEFAULT = ['heatmaps', 'counters'];

export const DEFAULT_PANES: ComparePaneConfig[] = DEFAULT_COMPARISON.map((algorithm) => ({
  algorithm,
  ...startTile(algorithm),
  features: {},
  views: [...COMPARE_VIEWS_DEFAULT],
}));

export const comparePaneId = (i: number) => `cmp${i}`;
