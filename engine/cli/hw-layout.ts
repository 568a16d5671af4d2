// run's serving-layout files (varlen --cu-seqlens-q/-k, paged --k-cache/--v-cache/--block-table/
// --cache-seqlens) for the hardware commands and `trace`: the same problem `run` would step, the
// serving fields the kernel's configuration reads (the sequences' lengths, the page size), and
// the layout's numeric steps.

import type { RunOptions, StepAlgorithm } from '../algorithms/types.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { validateProblem } from '../core/problem.ts';
import type { ProblemShape } from '../hw/model.ts';
import { pagedFromTensors, pagedShape, varlenFromTensors, varlenShape } from '../layouts/from-tensors.ts';
import { runPaged } from '../layouts/paged.ts';
import type { LayoutGenerator } from '../layouts/sequence-runner.ts';
import { runVarlen, seqLengths } from '../layouts/varlen.ts';
import { ArgsError, str, type ParsedArgs } from './args.ts';
import { baseFields, loadPagedFiles, loadVarlenFiles } from './layout-run.ts';
import { RANDOM_OPTIONS } from './problem-options.ts';

export interface LayoutProblem {
  problem: AttentionProblem;
  serving: Pick<ProblemShape, 'pageSize' | 'varlen'>;
  /** The layout stepped by one algorithm, sequence by sequence, as `run` steps it (inputs built from the files on first use). */
  steps(algo: StepAlgorithm, opts: Omit<RunOptions, 'annotate'>): LayoutGenerator;
}

/** The problem the layout files describe; undefined when none is given. */
export async function layoutProblemFromArgs(a: ParsedArgs): Promise<LayoutProblem | undefined> {
  const varlen = ['cu-seqlens-q', 'cu-seqlens-k'].some((r) => str(a, r) !== undefined);
  const paged = ['k-cache', 'v-cache', 'block-table', 'cache-seqlens'].some((r) => str(a, r) !== undefined);
  if (!varlen && !paged) return undefined;
  for (const r of ['seqlens-q', 'seqlens-k', 'page-size'])
    if (str(a, r) !== undefined || a[r] !== undefined)
      throw new ArgsError(`--${r} gives what the layout files already hold; give one or the other`);
  for (const r of Object.keys(RANDOM_OPTIONS))
    if (a[r] !== undefined) throw new ArgsError(`--${r} sets a random problem; the layout files give the problem`);
  if (varlen && paged) throw new ArgsError('give a varlen batch (--cu-seqlens-q/-k) or a paged cache (--k-cache, …), not both');
  if (varlen) {
    const t = await loadVarlenFiles(a);
    const sh = varlenShape(t);
    const seqlensQ = seqLengths(Array.from(t.cuSeqlensQ.data));
    const seqlensK = seqLengths(Array.from(t.cuSeqlensK.data));
    if (seqlensQ.length !== seqlensK.length)
      throw new ArgsError(`--cu-seqlens-q holds ${seqlensQ.length} sequences, --cu-seqlens-k ${seqlensK.length}`);
    const base = await baseFields(a, sh);
    const problem = validateProblem({
      ...base,
      batch: seqlensQ.length,
      nq: Math.max(1, ...seqlensQ),
      nk: Math.max(1, ...seqlensK),
    });
    return {
      problem,
      serving: { varlen: { seqlensQ, seqlensK, seqused: false } },
      steps(algo, opts) {
        const { vp, x } = varlenFromTensors(t, base);
        return runVarlen(algo, vp, x, opts);
      },
    };
  }
  const { t, layout } = await loadPagedFiles(a);
  const sh = pagedShape(t, layout);
  const pageSize = t.kCache.info.shape[1];
  const seqlensK = Array.from(t.cacheSeqlens.data);
  const base = await baseFields(a, sh);
  // seqlen_k is the block table's width in tokens; each sequence's own length comes as seqused_k.
  const problem = validateProblem({ ...base, batch: sh.B, nq: sh.nq, nk: t.blockTable.info.shape[1] * pageSize });
  return {
    problem,
    serving: { pageSize, varlen: { seqlensK, seqused: true } },
    steps(algo, opts) {
      const { pp, x } = pagedFromTensors(t, base, layout);
      return runPaged(algo, pp, x, opts).gen;
    },
  };
}
