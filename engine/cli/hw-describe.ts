// `describe`: the resource sheet of one hardware schedule as JSON. Exit code 1 when the
// configuration does not fit (the sheet still lists what it needs and what the GPU has).

import type { CliCommand } from './command.ts';
import { describeFor } from '../hw/registry.ts';
import { HW_OPTIONS_HELP, parseHwOptions } from './hw-options.ts';

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
    HW_OPTIONS_HELP,
  ].join('\n'),
  async run(args) {
    const o = parseHwOptions(args, { nq: 4096, d: 128 });
    const sheet = describeFor(o.algo, o.gpu, o.shape, o.features, o.pass);
    const fits = sheet.does_not_fit.length === 0;
    console.log(JSON.stringify({ ...sheet, fits }, null, 2));
    return fits ? 0 : 1;
  },
};
