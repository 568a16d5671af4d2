// `describe`: the resource sheet of one hardware schedule as JSON. Exit code 1 when the
// configuration does not fit (the sheet still lists what it needs and what the GPU has).

import type { CliCommand } from './command.ts';
import { describeFor } from '../algorithms/schedule-registry.ts';
import { HW_OPTIONS_HELP, parseHwOptions } from './hw-options.ts';
import { blockMaskSummary } from './mask-options.ts';

export const describeCommand: CliCommand = {
  name: 'describe',
  summary: 'resource sheet of a hardware schedule: SMEM/TMEM buffers, roles, registers, tiles',
  help: [
    'usage: npm run -s engine -- describe --algo ALGO --gpu GPU [--backward] [options]',
    '',
    'Prints JSON: smem, tmem, roles, registers, tiles, q_stage, kv_stage, ctas_per_sm, fits, does_not_fit.',
    'roles: one entry per warp role (name, warps, registers). The consumer warpgroups are named',
    'consumer0 … consumerN-1, one per warpgroup the kernel runs: FA3 block_m / 64 MMA warpgroups;',
    "FA4 its softmax warpgroups, one per Q stage, with the kernel's own name in kernel_name",
    '("softmax0", "softmax1"). FA4 also prints cta_group (2 in upstream\'s 2-CTA mode).',
    '',
    'With --mask-mod, also block_mask: the (Q tile, K/V tile) pairs the mask empties, leaves partial or',
    "full at the schedule's block_m × block_n, the density, and the FLOPs and K/V bytes skipping saves.",
    '',
    HW_OPTIONS_HELP,
  ].join('\n'),
  async run(args) {
    const o = await parseHwOptions(args);
    const sheet = describeFor(o.algo, o.gpu, o.shape, o.features, o.pass);
    const fits = sheet.does_not_fit.length === 0;
    // The block mask at the schedule's own tiles: what upstream's block-sparse tensors would hold.
    const blocks = o.problem.mask ? { block_mask: blockMaskSummary(o.problem, sheet.tiles.block_m, sheet.tiles.block_n) } : {};
    console.log(JSON.stringify({ ...sheet, fits, ...blocks }, null, 2));
    return fits ? 0 : 1;
  },
};
