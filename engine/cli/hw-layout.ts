// run's serving-layout files (varlen --cu-seqlens-q/-k, paged --k-cache/--v-cache/--block-table/
// --cache-seqlens) for the hardware commands: the same problem `run` would step, and the serving
// fields the kernel's configuration reads (the sequences' lengths, the page size).

import type { AttentionProblem } from '../core/problem.ts';
import { validateProblem } from '../core/problem.ts';
import type { ProblemShape } from '../hw/model.ts';
import { pagedShape, varlenShape } from '../layouts/from-tensors.ts';
import { seqLengths } from '../layouts/varlen.ts';
import { ArgsError, str, type ParsedArgs } from './args.ts';
import { baseFields, loadPagedFiles, loadVarlenFiles } from './layout-run.ts';

export interface LayoutProblem {
  problem: AttentionProblem;
  serving: Pick<ProblemShape, 'pageSize' | 'varlen'>;
}

/** The problem the layout files describe; undefined when none is given. */
export async function layoutProblemFromArgs(a: ParsedArgs): Promise<LayoutProblem | undefined> {
  const varlen = ['cu-seqlens-q', 'cu-seqlens-k'].some((r) => str(a, r) !== undefined);
  const paged = ['k-cache', 'v-cache', 'block-table', 'cache-seqlens'].some((r) => str(a, r) !== undefined);
  if (!varlen && !paged) return undefined;
  for (const r of ['seqlens-q', 'seqlens-k', 'page-size'])
    if (str(a, r) !== undefined || a[r] !== undefined)
      throw new ArgsError(`--${r} gives what the layout files already hold; give one or the other`);
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
    return { problem, serving: { varlen: { seqlensQ, seqlensK, seqused: false } } };
  }
  const { t, layout } = await loadPagedFiles(a);
  const sh = pagedShape(t, layout);
  const pageSize = t.kCache.info.shape[1];
  const seqlensK = Array.from(t.cacheSeqlens.data);
  const base = await baseFields(a, sh);
  // seqlen_k is the block table's width in tokens; each sequence's own length comes as seqused_k.
  const problem = validateProblem({ ...base, batch: sh.B, nq: sh.nq, nk: t.blockTable.info.shape[1] * pageSize });
  return { problem, serving: { pageSize, varlen: { seqlensK, seqused: true } } };
}
