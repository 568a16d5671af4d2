// `simulate`: predicted time, TFLOP/s and per-unit utilization of a whole problem on a GPU.

import type { CliCommand } from './command.ts';
import { simulateFor } from '../algorithms/schedule-registry.ts';
import { FitError } from '../hw/simulate.ts';
import { HW_OPTIONS_HELP, parseHwOptions } from './hw-options.ts';

export const simulateCommand: CliCommand = {
  name: 'simulate',
  summary: 'predicted time_us, tflops and unit utilization of a hardware schedule on a GPU',
  help: [
    'usage: npm run -s engine -- simulate --algo ALGO --gpu GPU [problem options: --q/--k/--v FILE or --b --hq --nq --nk --d] [options]',
    '',
    'Prints JSON: time_us, tflops (4·B·Hq·Nq·Nk·d, halved when causal; 2.5 × that with --backward),',
    'utilization per unit, hbm_bytes (the unique HBM traffic: the floor of the time),',
    'ctas, ctas_per_sm, sms_busy, waves. The model runs one SM with the discrete-event scheduler',
    'and spreads the grid over the SMs (see engine/TRACE.md, "Hardware events").',
    '',
    HW_OPTIONS_HELP,
  ].join('\n'),
  async run(args) {
    const o = await parseHwOptions(args);
    try {
      console.log(JSON.stringify({ pass: o.pass, ...simulateFor(o.algo, o.gpu, o.shape, o.features, o.pass) }, null, 2));
      return 0;
    } catch (e) {
      if (e instanceof FitError) {
        console.error(`error: ${e.message}`);
        return 1;
      }
      throw e;
    }
  },
};
