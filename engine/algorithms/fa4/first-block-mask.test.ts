// FA4 runs the mask on the first K/V block a CTA visits whatever the diagonal does
// (flash_fwd_sm100.py@0251105a l. 2303-2311: n_block_max − 1 with mask_fn), then on the blocks
// crossing the diagonal (l. 2313-2328). At seqlen_q 1 the causal edge seqlen_k − 1 keeps every
// block unmasked by the diagonal, so upstream masks exactly one block: the last in K.

import { describe, expect, it } from 'vitest';
import type { ProblemShape } from '../../hw/model.ts';
import { scheduleFor } from '../schedule-registry.ts';

const shape = (o: Partial<ProblemShape>): ProblemShape => ({
  batch: 1,
  hq: 1,
  hk: 1,
  nq: 1,
  nk: 1024,
  d: 128,
  dv: 128,
  dtype: 'bf16',
  causal: true,
  ...o,
});

const masks = (s: ProblemShape) => scheduleFor('fa4', 'b200', s).timeline.filter((e) => e.op === 'causal mask');

describe('FA4 masks the first K/V block it visits (flash_fwd_sm100.py@0251105a l. 2303-2328)', () => {
  it('seqlen_q 1, seqlen_k a multiple of tile_n 128: one masked block, the last in K (visited first)', () => {
    const m = masks(shape({}));
    expect(m.length).toBe(1);
    expect(m[0].phase?.kv).toBe(1024 / 128 - 1);
  });

  it('seqlen_q 1 with packed GQA (Hq 8 / Hk 1): still one masked block', () => {
    const m = masks(shape({ hq: 8 }));
    expect(m.length).toBe(1);
    expect(m[0].phase?.kv).toBe(7);
  });

  it('no mask without causal', () => {
    expect(masks(shape({ causal: false })).length).toBe(0);
  });
});
