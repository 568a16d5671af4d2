// Kernel switches of the backward passes that have them, by algorithm id (compare panes
// offer these instead of the forward's when the shared problem runs the backward).
import type { FeatureSpecs } from '../../engine/algorithms/features.ts';
import { FA3_BACKWARD_FEATURES } from '../../engine/algorithms/fa3/backward.ts';

export const BACKWARD_FEATURE_SPECS: Record<string, FeatureSpecs> = {
  fa3: FA3_BACKWARD_FEATURES,
};
