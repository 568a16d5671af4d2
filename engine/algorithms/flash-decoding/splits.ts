// Flash-decoding's split plan for a batch of sequences of different lengths. FA2's split-KV
// path picks num_splits once per launch, from the longest sequence (max_seqlen_k) and
// B · Hq · ceil(max_seqlen_q / kBlockM) CTAs, and every sequence's split s covers the same
// blocks [s · n_per_split, (s + 1) · n_per_split): a short sequence simply has fewer
// non-empty splits. Run one sequence at a time, each sub-run gets that fixed
// blocksPerSplit instead of choosing its own. On a paged cache the split length is rounded
// up to whole pages, so no page is shared by two splits (each split walks its own pages).

import { DECODING_BLOCK_M, decodingBlockN, FLASH_DECODING_FEATURES, numSplitsHeuristic } from './forward.ts';
import { readFeatures } from '../features.ts';
import { ProblemError } from '../../core/problem.ts';
import type { RunOptions, StepAlgorithm } from '../types.ts';
import type { LayoutBase } from '../../layouts/sequence-runner.ts';

/**
 * Feature overrides for flash-decoding over the batch (undefined for other algorithms):
 * a fixed blocksPerSplit, a multiple of `blocksPerPage` (1 when there are no pages).
 */
export function decodingSplitFeatures(
  algo: StepAlgorithm,
  base: LayoutBase,
  lq: readonly number[],
  lk: readonly number[],
  opts: Pick<RunOptions, 'blockM' | 'blockN' | 'features'>,
  blocksPerPage: number,
): Record<string, number> | undefined {
  if (algo.id !== 'flash-decoding') return undefined;
  const f = readFeatures('flash-decoding', FLASH_DECODING_FEATURES, opts.features);
  if (f.blocksPerSplit > 0) {
    if (f.splits > 0) throw new ProblemError('features.blocksPerSplit', 'give splits or blocksPerSplit, not both');
    if (f.blocksPerSplit % blocksPerPage !== 0) {
      throw new ProblemError(
        'features.blocksPerSplit',
        `must be a multiple of the ${blocksPerPage} K/V blocks of one page, so that splits end on page boundaries; got ${f.blocksPerSplit}`,
      );
    }
    return undefined;
  }
  const blockM = opts.blockM ?? DECODING_BLOCK_M;
  const blockN = opts.blockN ?? decodingBlockN(base.d);
  const maxQ = Math.max(0, ...lq);
  const maxK = Math.max(0, ...lk);
  if (maxQ === 0 || maxK === 0) return undefined;
  const nBlocks = Math.ceil(maxK / blockN);
  const ctas = lq.length * base.hq * Math.ceil(maxQ / blockM);
  const splits = f.splits > 0 ? f.splits : numSplitsHeuristic(ctas, f.smCount, nBlocks);
  const per = Math.ceil(Math.ceil(nBlocks / splits) / blocksPerPage) * blocksPerPage;
  return { splits: 0, blocksPerSplit: per };
}
