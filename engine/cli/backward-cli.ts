// The backward pass on the command line. `run --do dO.npy` runs each algorithm's forward
// and backward and writes, next to o.npy and lse.npy, dq.npy, dk.npy and dv.npy (float32,
// the rank and layout of q, k and v). `trace --do FILE | --backward` streams the backward's
// events (random dO from the seed with --backward alone). Everything — the algorithms'
// backward support, dO's shape, every run — is checked before the first file is written.

import { join } from 'node:path';
import { runToEnd } from '../run.ts';
import { countersToStats } from '../core/counters.ts';
import { roundArray } from '../core/dtype.ts';
import { encodeNpy } from '../io/npy.ts';
import { nominalFlops, ProblemError, type AttentionProblem } from '../core/problem.ts';
import { backwardById } from '../algorithms/backward-registry.ts';
import { randomGradOutput } from '../backward/grad-output.ts';
import type { BackwardAlgorithm, BackwardInputs, BackwardResult } from '../backward/types.ts';
import { flag, num, str, type OptionSpec, type ParsedArgs } from './args.ts';
import { fromBhnd, shapeFor, toBhnd, type CliProblem } from './problem-options.ts';
import { loadTensorFile } from './tensor-files.ts';
import { StagedOutputs, type OutputPlan } from './output-files.ts';
import { allNanWarnings } from './run-outputs.ts';

export const BACKWARD_RUN_OPTIONS: OptionSpec = { do: 'string' };
export const BACKWARD_TRACE_OPTIONS: OptionSpec = { do: 'string', backward: 'flag' };

export const BACKWARD_RUN_HELP = `backward:
  --do FILE                   dO, shaped like O (q's rank and layout, last dim dv): also runs
                              the backward and writes dq.npy, dk.npy, dv.npy (float32, the
                              rank and layout of q, k, v); stats.json gains "backward"
                              (algorithms with a backward: standard, fa1, fa2, fa3, fa4)`;

export const BACKWARD_TRACE_HELP = `backward:
  --do FILE                   trace the backward pass with this dO (shaped like O)
  --backward                  trace the backward pass with a random dO (from --seed)`;

/** The backward algorithms for the ids, or a ProblemError naming the first one without a backward. */
export function backwardsFor(ids: string[]): BackwardAlgorithm[] {
  return ids.map(backwardById);
}

/** dO from a file: must have O's shape in the caller's rank and layout; returned BHND, rounded to the dtype. */
export async function loadGradOutput(spec: string, cp: CliProblem): Promise<Float32Array> {
  const p = cp.problem;
  const t = await loadTensorFile(spec);
  const dims = [p.batch, p.hq, p.nq, p.dv];
  const want = shapeFor(cp.rank, dims, cp.layout);
  const got = t.info.shape;
  if (got.length !== want.length || got.some((n, i) => n !== want[i])) {
    throw new ProblemError(
      'dO',
      `${spec}: expected shape [${want.join(', ')}] (the shape of O: q's layout with dv = ${p.dv}), got [${got.join(', ')}]`,
    );
  }
  return roundArray(p.dtype, toBhnd(t.data, dims, cp.layout));
}

/** Whether the arguments ask for a backward pass (`trace`). */
export function wantsBackward(a: ParsedArgs): boolean {
  return str(a, 'do') !== undefined || flag(a, 'backward');
}

/** The inputs of a backward trace: dO from --do, else random from --seed. */
export async function traceBackwardInputs(a: ParsedArgs, cp: CliProblem): Promise<BackwardInputs> {
  const file = str(a, 'do');
  const dO = file ? await loadGradOutput(file, cp) : randomGradOutput(cp.problem, num(a, 'seed') ?? 0);
  return { ...cp.inputs, dO };
}

/** `run --do`: every algorithm's forward and backward, then the files. */
export async function runBackwardCli(a: ParsedArgs, cp: CliProblem, ids: string[], plan: OutputPlan): Promise<number> {
  const algos = backwardsFor(ids);
  const p: AttentionProblem = cp.problem;
  const x: BackwardInputs = { ...cp.inputs, dO: await loadGradOutput(str(a, 'do')!, cp) };
  const results = algos.map((algo) => {
    const t0 = performance.now();
    const r = runToEnd(algo, p, x, { ...cp.blocks, features: cp.features }) as BackwardResult;
    return { algo, r, seconds: (performance.now() - t0) / 1000 };
  });
  const files = (r: BackwardResult): [string, Float32Array, number[]][] => [
    ['o.npy', r.o, [p.batch, p.hq, p.nq, p.dv]],
    ['dq.npy', r.dq, [p.batch, p.hq, p.nq, p.d]],
    ['dk.npy', r.dk, [p.batch, p.hk, p.nk, p.d]],
    ['dv.npy', r.dv, [p.batch, p.hk, p.nk, p.dv]],
  ];
  await StagedOutputs.write(plan, async (staged) => {
    for (const [i, { algo, r }] of results.entries()) {
      const dir = plan.targets[i];
      for (const [name, data, dims] of files(r)) {
        await staged.writeFile(join(dir, name), encodeNpy(fromBhnd(data, dims, cp.layout), shapeFor(cp.rank, dims, cp.layout)));
      }
      await staged.writeFile(join(dir, 'lse.npy'), encodeNpy(r.lse, [p.batch, p.hq, p.nq]));
      const stats = {
        algo: algo.id,
        ...countersToStats(r.forward.counters),
        block_m: r.blocks.blockM,
        block_n: r.blocks.blockN,
        nominal_flops: nominalFlops(p),
        backward: { ...countersToStats(r.counters), nominal_flops: 2.5 * nominalFlops(p) },
        problem: p,
      };
      await staged.writeFile(join(dir, 'stats.json'), JSON.stringify(stats, null, 2) + '\n');
    }
  });
  for (const [i, { algo, r, seconds }] of results.entries()) {
    console.log(
      `${algo.id}: forward ${r.forward.counters.steps} steps, backward ${r.counters.steps} steps, ${seconds.toFixed(3)} s -> ${plan.targets[i]}`,
    );
  }
  return allNanWarnings(results.map(({ algo, r }) => ({ id: algo.id, o: r.o })));
}
