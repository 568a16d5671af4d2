// `run`: runs one or more algorithms on tensors from files and writes, per algorithm,
// DIR/<algo>/o.npy (float32, q's layout with dv), lse.npy (float32 [B, Hq, Nq], natural
// log) and stats.json (the counters). Options, files and every algorithm run are checked
// before the first file is written, and the files are staged and renamed into place only
// when all are complete (output-files.ts), so a failure never leaves half the outputs behind.

import { join } from 'node:path';
import { algorithmById } from '../algorithms/registry.ts';
import { countersToStats } from '../core/counters.ts';
import { encodeNpy } from '../io/npy.ts';
import { nominalFlops } from '../core/problem.ts';
import { nonFiniteInputs } from '../core/nonfinite.ts';
import { runToEnd } from '../run.ts';
import { referenceAttention } from '../core/reference.ts';
import { outputError } from '../lowprec/error-metrics.ts';
import { ArgsError, num, parseArgs, str } from './args.ts';
import { checkOutputs, StagedOutputs } from './output-files.ts';
import { allNanWarnings, OUTPUT_OPTIONS, outputPlan } from './run-outputs.ts';
import type { CliCommand } from './command.ts';
import { runWebGpuCli, splitBackend, WEBGPU_RUN_HELP } from './run-webgpu.ts';
import { isLayoutRun, LAYOUT_RUN_HELP, runLayoutCli } from './layout-run.ts';
import { algoIds, cliProblem, fromBhnd, PROBLEM_HELP, PROBLEM_OPTIONS, shapeFor } from './problem-options.ts';
import { BACKWARD_RUN_HELP, BACKWARD_RUN_OPTIONS, backwardsFor, runBackwardCli } from './backward-cli.ts';

export const runCommand: CliCommand = {
  name: 'run',
  summary: 'run algorithms on .npy/.safetensors tensors; write o.npy, lse.npy, stats.json',
  help: `usage: npm run -s engine -- run --algo ID[,ID...] --q Q --k K --v V [options] --out DIR

Runs each algorithm (ids from the algorithm registry, e.g. standard, fa1, fa2) with
tracing off and writes DIR/<algo>/o.npy (float32, q's rank and layout, last dim dv),
DIR/<algo>/lse.npy (float32 [B, Hq, Nq], natural log; -inf for fully masked rows) and
DIR/<algo>/stats.json (hbm_bytes_read, hbm_bytes_written, matmul_flops, exp_count,
rescale_count, steps, the per-tensor breakdown, and nonfinite_inputs: the count of NaN
and ±Infinity values in q, k and v, each also named in a warning line on stderr) and
DIR/<algo>/error.json (max_abs, rmse, rel_l1 of o against the float64 reference).

${PROBLEM_HELP}
${BACKWARD_RUN_HELP}
output:
  --out DIR                   output directory (created); DIR/<algo> must not exist yet
  --force                     replace existing DIR/<algo> outputs (never an input file)
  --max-bytes N               memory the run may hold (default 4 GB); a larger problem, or a
                              tensor file whose header declares more, is refused before any
                              tensor is allocated, naming the size to change
exit status: 0 done; 1 refused (nothing written); 3 written, but an output is entirely NaN
(e.g. an overflowing --scale), with a warning on stderr
${LAYOUT_RUN_HELP}
${WEBGPU_RUN_HELP}`,

  async run(argvAll) {
    const { backend, rest: argv } = splitBackend(argvAll);
    if (backend === 'webgpu') return runWebGpuCli(argv);
    if (isLayoutRun(argv)) return runLayoutCli(argv);
    const a = parseArgs(argv, { ...PROBLEM_OPTIONS, ...BACKWARD_RUN_OPTIONS, ...OUTPUT_OPTIONS });
    const out = str(a, 'out');
    if (!out) throw new ArgsError('--out DIR is required');
    const algos = algoIds(a).map(algorithmById);
    const backward = str(a, 'do') !== undefined;
    // With --do, an algorithm without a backward is refused before any file is read.
    if (backward) backwardsFor(algos.map((x) => x.id));
    const plan = outputPlan(
      a,
      out,
      algos.map((x) => x.id),
    );
    checkOutputs(plan);
    const cp = await cliProblem(a, false, { command: 'run', maxBytes: num(a, 'max-bytes'), algos: algos.length, backward });
    if (backward)
      return runBackwardCli(
        a,
        cp,
        algos.map((x) => x.id),
        plan,
      );
    const p = cp.problem;
    // NaN/Inf inputs run (their rows come out NaN) but are never silent.
    const nonfinite = nonFiniteInputs(p, cp.inputs);
    for (const line of nonfinite.sentences) console.error(`warning: ${line}`);
    // Every algorithm runs before anything is written, so an algorithm that rejects the
    // problem (or a feature) leaves no partial output directory behind.
    const results = algos.map((algo) => {
      const t0 = performance.now();
      const r = runToEnd(algo, p, cp.inputs, { ...cp.blocks, features: cp.features });
      return { algo, r, seconds: (performance.now() - t0) / 1000 };
    });
    const ref = referenceAttention(p, cp.inputs).o;
    await StagedOutputs.write(plan, async (staged) => {
      for (const { algo, r } of results) {
        const dir = join(out, algo.id);
        const oDims = [p.batch, p.hq, p.nq, p.dv];
        await staged.writeFile(join(dir, 'o.npy'), encodeNpy(fromBhnd(r.o, oDims, cp.layout), shapeFor(cp.rank, oDims, cp.layout)));
        await staged.writeFile(join(dir, 'lse.npy'), encodeNpy(r.lse, [p.batch, p.hq, p.nq]));
        const stats = {
          algo: algo.id,
          ...countersToStats(r.counters),
          block_m: r.blocks.blockM,
          block_n: r.blocks.blockN,
          nominal_flops: nominalFlops(p),
          nonfinite_inputs: nonfinite.counts,
          // FP8 runs: P values the e4m3 cast flushed to zero (of castP values > 0), input entries saturated at ±max.
          ...(r.stats && 'flushedP' in r.stats
            ? { precision: { flushed_p: r.stats.flushedP, cast_p: r.stats.castP, saturated: r.stats.saturated } }
            : {}),
          problem: p,
        };
        await staged.writeFile(join(dir, 'stats.json'), JSON.stringify(stats, null, 2) + '\n');
        await staged.writeFile(
          join(dir, 'error.json'),
          JSON.stringify({ algo: algo.id, dtype: p.dtype, reference: 'float64', ...outputError(r.o, ref) }, null, 2) + '\n',
        );
      }
    });
    for (const { algo, r, seconds } of results)
      console.log(`${algo.id}: ${r.counters.steps} steps, ${seconds.toFixed(3)} s -> ${join(out, algo.id)}`);
    return allNanWarnings(results.map(({ algo, r }) => ({ id: algo.id, o: r.o })));
  },
};
