// The serving page's form and its limits: constants the app shell reads at start-up, kept
// apart from the runner so the first screen does not load the layouts.

import { DEFAULT_ALGORITHM } from '../algorithms/registry.ts';

export type ServingLayout = 'varlen' | 'paged';

/** The generated problem the page's form describes. */
export interface ServingForm {
  layout: ServingLayout;
  algorithm: string;
  /** varlen: query rows per sequence. */
  seqlensQ: number[];
  /** varlen: keys per sequence; paged: tokens in the cache per sequence. */
  seqlensK: number[];
  /** paged: query rows per sequence (1 = one decode step). */
  nq: number;
  pageSize: number;
  hq: number;
  hk: number;
  d: number;
  causal: boolean;
  seed: number;
  /** flash-decoding: splits, 0 = FA2's heuristic. */
  splits: number;
}

export const DEFAULT_SERVING_FORM: ServingForm = {
  layout: 'varlen',
  algorithm: DEFAULT_ALGORITHM,
  seqlensQ: [12, 40, 0, 23],
  seqlensK: [12, 40, 9, 23],
  nq: 1,
  pageSize: 16,
  hq: 2,
  hk: 1,
  d: 16,
  causal: true,
  seed: 1,
  splits: 0,
};

/** Limits that keep a stepped run small enough to hold and draw. */
export const SERVING_LIMITS = { sequences: 12, seqlen: 512, heads: 8, d: 128, pageSize: 256, nq: 64 };
