// FlashAttention-4 backward (Blackwell): its switches. The hardware schedule is ./backward-schedule.ts.

import type { FeatureSpecs } from '../features.ts';

export const FA4_BACKWARD_FEATURES = {
  deterministic: { default: false, doc: 'a semaphore per dQ row block orders the column blocks’ adds (reproducible dQ, some waiting)' },
} satisfies FeatureSpecs;
