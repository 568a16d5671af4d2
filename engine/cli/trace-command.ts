// `trace`: streams an algorithm's trace events as JSON lines (one event per line, each
// tagged with "algo"), for problems from files or random ones. Non-finite numbers are
// written as the strings "Infinity", "-Infinity", "NaN" (see TRACE.md).

import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { algorithmById } from '../algorithms/registry.ts';
import { toJsonLine } from '../trace/jsonl.ts';
import { ArgsError, flag, list, num, parseArgs, str } from './args.ts';
import { layoutProblemFromArgs } from './hw-layout.ts';
import type { TraceEvent } from '../trace/events.ts';
import { LAYOUT_OPTIONS } from './layout-run.ts';
import { checkCliSize } from './size-limits.ts';
import { checkOutputs, inputFilesOf, StagedOutputs, type OutputPlan } from './output-files.ts';
import type { CliCommand } from './command.ts';
import {
  algoIds,
  blockOptions,
  cliProblem,
  parseFeatures,
  PROBLEM_HELP,
  PROBLEM_OPTIONS,
  RANDOM_OPTIONS,
  runTiles,
} from './problem-options.ts';
import { describeFor, hardwareTraceLinesFor, kernelStepTile } from '../algorithms/schedule-registry.ts';
import { BACKWARD_TRACE_HELP, BACKWARD_TRACE_OPTIONS, backwardsFor, traceBackwardInputs, wantsBackward } from './backward-cli.ts';
import { HW_SWITCHES_HELP, HW_TRACE_OPTIONS, hwFeaturesFromArgs, hwShapeOf, stepFeaturesFromArgs } from './hw-options.ts';

/** Buffers lines and respects backpressure, so a long trace piped into `head` or a file never piles up in memory. */
async function writeLines(sink: Writable, lines: Iterable<string>, failed: () => Error | undefined): Promise<void> {
  let chunk = '';
  for (const line of lines) {
    chunk += line + '\n';
    if (chunk.length >= 1 << 16) {
      if (!sink.write(chunk)) await once(sink, 'drain');
      chunk = '';
      const e = failed();
      if (e) throw e;
    }
  }
  if (chunk) sink.write(chunk);
}

export const traceCommand: CliCommand = {
  name: 'trace',
  summary: 'print the trace events of algorithms as JSON lines',
  help: `usage: npm run -s engine -- trace --algo ID[,ID...] [problem options] [--format jsonl] [--out FILE]

Prints every trace event (TRACE.md describes them) as one JSON object per line, with
an added "algo" field naming the algorithm. Problem from files (--q --k --v) or random:

random problem:
  --b N --hq N --hk N         batch, query heads, key/value heads (default 1, 1, hq)
  --nq N --nk N               query and key length (default 64, nq)
  --d N --dv N                head dims (default 32, d)
  --seed N                    random seed (default 0)
  --distribution NAME         normal | large-logits | outlier-row | fa3-outliers | sink (default normal)

${PROBLEM_HELP}
serving layouts: run's varlen (--q --k --v --cu-seqlens-q --cu-seqlens-k) or paged (--q
  --k-cache --v-cache --block-table --cache-seqlens) files; the steps are run's, sequence by
  sequence (events carry the packed rows or the pages), forward only
${HW_SWITCHES_HELP}
  with --gpu, the events of one SM's schedule of the same problem follow the numeric steps
  (fa3, fa4, fmha-v2, cute-fa2, flash-decoding; with --do/--backward the backward kernel's:
  fa4, fa3, fa2; engine/TRACE.md, "Hardware events")
${BACKWARD_TRACE_HELP}
output:
  --format jsonl              the only format (default)
  --out FILE                  write to FILE instead of stdout (written next to FILE, renamed
                              into place when complete); FILE must not exist yet
  --force                     replace an existing FILE (never an input file)
  --max-bytes N               the most bytes of JSON lines to write (default 1 GB); a longer
                              trace is refused before it starts, naming the size to change`,

  async run(argv) {
    const a = parseArgs(argv, {
      ...PROBLEM_OPTIONS,
      ...RANDOM_OPTIONS,
      ...HW_TRACE_OPTIONS,
      ...BACKWARD_TRACE_OPTIONS,
      ...LAYOUT_OPTIONS,
      format: 'string',
      out: 'string',
      force: 'flag',
      'max-bytes': 'int',
    });
    const format = str(a, 'format') ?? 'jsonl';
    if (format !== 'jsonl') throw new ArgsError(`--format must be jsonl, got '${format}'`);
    const backward = wantsBackward(a);
    const algos = backward ? backwardsFor(algoIds(a)) : algoIds(a).map(algorithmById);
    const file = str(a, 'out');
    const plan: OutputPlan | undefined = file
      ? { targets: [file], option: '--out', force: flag(a, 'force'), inputs: inputFilesOf(a) }
      : undefined;
    if (plan) checkOutputs(plan);
    const sizing = { command: 'trace' as const, maxBytes: num(a, 'max-bytes'), algos: algos.length, backward };
    const layout = await layoutProblemFromArgs(a);
    if (layout && backward)
      throw new ArgsError('--do/--backward: trace steps a serving layout forward only (run --do writes a varlen batch’s gradients)');
    const cp = layout ? undefined : await cliProblem(a, true, sizing);
    if (cp && backward) cp.inputs = await traceBackwardInputs(a, cp);
    const blocks = cp?.blocks ?? blockOptions(a);
    const features = cp?.features ?? parseFeatures(list(a, 'feature'));
    const problem = cp?.problem ?? layout!.problem;
    // A layout's trace is at most its batch with every sequence as long as the longest.
    if (layout) for (const tile of runTiles(a, problem, blocks, false)) checkCliSize(problem, tile, sizing, true);
    const pass = backward ? 'backward' : 'forward';
    const hwShape = (id: string) => ({ ...hwShapeOf(a, problem, id, pass), ...layout?.serving });
    // Hardware events are checked before anything is written, so a bad --gpu never cuts a trace short.
    const gpu = str(a, 'gpu');
    if (gpu) {
      for (const algo of algos) {
        const sheet = describeFor(algo.id, gpu, hwShape(algo.id), hwFeaturesFromArgs(a, algo.id), pass);
        if (sheet.does_not_fit.length > 0) throw new ArgsError(`${algo.id} on ${gpu} does not fit: ${sheet.does_not_fit.join('; ')}`);
      }
    }
    const staged = plan ? await StagedOutputs.begin(plan) : undefined;
    let error: Error | undefined;
    const sink: Writable = staged && file ? await staged.stream(file) : process.stdout;
    if (staged) sink.on('error', (e) => (error = e));
    // A reader that stops early (`| head`) closes the pipe: that ends the trace, it is not an error.
    else process.stdout.on('error', (e: NodeJS.ErrnoException) => process.exit(e.code === 'EPIPE' ? 0 : 1));
    try {
      for (const algo of algos) {
        // With --gpu and no tile given, the stepper steps the K/V tile the kernel runs (FA4's tile_n 64 with d ≠ dv split KV).
        const kernelTile = gpu && Object.keys(blocks).length === 0 ? kernelStepTile(algo.id, gpu, hwShape(algo.id), pass) : undefined;
        const opts = { ...kernelTile, ...blocks, features: { ...features, ...stepFeaturesFromArgs(a, algo.id) }, trace: true };
        // A layout's steps are run's, sequence by sequence; a dense problem's, the algorithm's own.
        const gen: Generator<TraceEvent, unknown, void> = layout
          ? layout.steps(algorithmById(algo.id), opts)
          : algo.run(cp!.problem, cp!.inputs, opts);
        const lines = function* (): Generator<string> {
          for (let r = gen.next(); !r.done; r = gen.next()) yield toJsonLine({ algo: algo.id, ...r.value });
        };
        await writeLines(sink, lines(), () => error);
        // With --gpu, one SM's hardware schedule of the same problem follows (type hw.*).
        if (gpu) {
          await writeLines(sink, hardwareTraceLinesFor(algo.id, gpu, hwShape(algo.id), hwFeaturesFromArgs(a, algo.id), pass), () => error);
        }
      }
      if (staged) {
        sink.end();
        await once(sink, 'finish');
        if (error) throw error;
        await staged.commit();
      }
    } catch (e) {
      if (staged) {
        sink.destroy();
        await staged.discard();
      }
      throw e;
    }
    return 0;
  },
};
