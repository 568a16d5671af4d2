// FA4's tile scheduler as flash-attention 0251105a picks it: interface.py l. 815 (max_m_blocks_leq_one)
// and l. 1075-1085 (is_static_persistent), flash_fwd_sm100.py l. 281-296 (the choice) and l. 726
// (lpt = is_causal or is_local); no tile-count semaphore and CLC off, upstream's defaults.

import { describe, expect, it } from 'vitest';
import type { ProblemShape } from '../../hw/model.ts';
import { conformanceShape } from '../../hw/conformance.ts';
import { fa4DispatchOf, fa4Hw } from './schedule.ts';

const shape = (o: Partial<ProblemShape>): ProblemShape => conformanceShape({ batch: 2, ...o });

const cases: [string, Partial<ProblemShape>, string, boolean][] = [
  ['dense, no mask, no split: static persistent (l. 293-294)', {}, 'StaticPersistentTileScheduler', false],
  ['causal: LPT (l. 291-292)', { causal: true }, 'SingleTileLPTScheduler', true],
  ['sliding window: LPT (l. 291-292)', { window: { left: 512, right: 0 } }, 'SingleTileLPTScheduler', true],
  ['no mask, split KV: single tile (l. 295-296)', { numSplits: 4 }, 'SingleTileScheduler', false],
  [
    'varlen Q, causal, many M blocks: single-tile varlen (l. 289-290)',
    { causal: true, batch: 1, varlen: { seqlensQ: [4096, 1000] } },
    'SingleTileVarlenScheduler',
    true,
  ],
  [
    'varlen Q, causal, one M block (decoding): static persistent (l. 286-287)',
    { causal: true, nq: 1, batch: 1, varlen: { seqlensQ: [1, 1] } },
    'StaticPersistentTileScheduler',
    false,
  ],
  ['d = dv = 256: the dedicated kernel, grid order', { causal: true, d: 256, dv: 256 }, 'hd256 grid order', false],
];

describe('FA4 tile scheduler (flash_fwd_sm100.py@0251105a l. 281-296)', () => {
  for (const [name, o, scheduler, lpt] of cases)
    it(name, () => {
      const s = shape(o);
      const dp = fa4DispatchOf(s);
      expect(dp.tileScheduler).toBe(scheduler);
      expect(dp.longestFirst).toBe(lpt);
      const order = fa4Hw.longestFirst as (s: ProblemShape) => boolean;
      expect(order(s)).toBe(lpt);
    });

  it('the why line names the upstream lines and the scheduler', () => {
    const line = fa4DispatchOf(shape({ causal: true })).why.find((w) => w.includes('l. 281-296'));
    expect(line).toContain('flash_attn/cute/interface.py@0251105a l. 815, 1075-1085 with flash_attn/cute/flash_fwd_sm100.py@0251105a');
    expect(line).toContain('SingleTileLPTScheduler, longest tiles first');
  });
});
