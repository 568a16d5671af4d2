// FlashAttention-4 on Blackwell (SM100): TMEM accumulators, lazy rescaling, emulated exp2.

import { defineAlgorithm } from '../descriptor.ts';
import { FA4_BACKWARD_FEATURES, fa4Backward } from './backward.ts';
import { fa4BwdHw } from './backward-schedule.ts';
import { FA4_FEATURES, fa4 } from './forward.ts';
import { FA4_BLOCK_M, FA4_BLOCK_N, fa4Hw } from './schedule.ts';
import { FA4_SUPPORTS } from './supports.ts';

export const fa4Algorithm = defineAlgorithm({
  id: 'fa4',
  name: fa4.name,
  title: 'FA4',
  forward: fa4,
  switches: FA4_FEATURES,
  backward: { algorithm: fa4Backward, switches: FA4_BACKWARD_FEATURES, dqAccumulation: true, scaleLater: true },
  schedule: fa4Hw,
  backwardSchedule: fa4BwdHw,
  backwardGpu: 'b200',
  registerNote:
    'per-role budgets: forward, num_regs_softmax and num_regs_correction of flash_attn/cute/flash_fwd_sm100.py, or of sm100_hd256_2cta_fmha_forward.py at d = 256; backward, num_regs_reduce, num_regs_compute, num_regs_load and num_regs_mma of flash_bwd_sm100.py',
  defaults: { gpu: 'b200', dtype: 'bf16', nq: 512, nk: 512, d: 128, dv: 128 },
  tiles: () => ({ blockM: FA4_BLOCK_M, blockN: FA4_BLOCK_N }),
  supports: FA4_SUPPORTS,
  rowStats: 'on-chip',
  serving: { pageTableEntryBytes: 4, splits: false },
});
