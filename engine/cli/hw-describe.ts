// `describe`: the resource sheet of one hardware schedule as JSON. Exit code 1 when the
// configuration does not fit (the sheet still lists what it needs and what the GPU has).

import type { CliCommand } from './command.ts';
import { describeFor } from '../hw/registry.ts';
import { HW_OPTIONS_HELP, parseHwOptions } from './hw-options.ts';
import { blockMaskSummary, MASK_HELP, maskFromFlags } from './mask-options.ts';

/** --mask-mod / --score-mod and their values, taken out of describe's arguments. */
function takeMaskFlags(args: string[]): { rest: string[]; maskMod?: string; scoreMod?: string } {
  const rest: string[] = [];
  const got: { maskMod?: string; scoreMod?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const key = args[i] === '--mask-mod' ? 'maskMod' : args[i] === '--score-mod' ? 'scoreMod' : undefined;
    if (key === undefined) {
      rest.push(args[i]);
      continue;
    }
    const v = args[++i];
    if (v === undefined) throw new Error(`${args[i - 1]} needs a value`);
    got[key] = v;
  }
  return { rest, ...got };
}

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
    MASK_HELP,
  ].join('\n'),
  async run(args) {
    const { rest, maskMod, scoreMod } = takeMaskFlags(args);
    const o = parseHwOptions(rest, { nq: 4096, d: 128 });
    const sheet = describeFor(o.algo, o.gpu, o.shape, o.features, o.pass);
    const fits = sheet.does_not_fit.length === 0;
    const mask = maskFromFlags(maskMod, scoreMod, o.shape);
    // The block mask at the schedule's own tiles: what upstream's block-sparse tensors would hold.
    const blocks = mask ? { block_mask: blockMaskSummary({ ...o.shape, mask }, sheet.tiles.block_m, sheet.tiles.block_n) } : {};
    console.log(JSON.stringify({ ...sheet, fits, ...blocks }, null, 2));
    return fits ? 0 : 1;
  },
};
