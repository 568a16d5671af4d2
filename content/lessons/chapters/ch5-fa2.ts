// Chapter 5: FA2 beside FA1 — swapped loops, deferred normalization, LSE, Q-block parallelism.
import type { Chapter } from './types.ts';
import { firstIndex, fmt, fmtBytes, hbmTotal, lessonRequest, tensorTraffic } from './queries.ts';
import type { LoadRequest } from '../../../engine/api.ts';

const problem = { nq: 32, nk: 32, d: 16 };
const blocks = { blockM: 8, blockN: 8 };

const fa1Preset = lessonRequest('fa1', problem, blocks);
const withKvBlocksOf16 = (r: LoadRequest): LoadRequest => ({ ...r, blocks: { ...r.blocks, blockN: 16 } });
export const chapter5: Chapter = {
  number: 5,
  slug: 'fa2',
  title: 'FA2: swapped loops and one division',
  summary: 'Q blocks outside, O on chip until the end, LSE for the backward pass; FA1 beside it.',
  blocks: [
    {
      kind: 'p',
      text: "FA2 keeps FA1's tiles and its arithmetic of $m$ and $\\ell$ but changes three things. First, the loops swap: the outer loop takes one $Q$ block and the inner loop streams every K/V block past it. $O_i$, $\\ell_i$ and $m_i$ then never leave the chip until the row block is finished, and the per-block reads and writes of $O$ that dominated FA1's traffic disappear. In exchange every $Q$ block streams all of $K$ and $V$, so those two are read once per $Q$ block instead of once.",
    },
    {
      kind: 'p',
      text: 'Second, the output stays unnormalized while it accumulates; the division by $\\ell$ happens once, after the last block:',
    },
    {
      kind: 'math',
      tex: '\\tilde O_i \\leftarrow \\mathrm{diag}\\big(e^{m^{\\text{old}}_i - m^{\\text{new}}_i}\\big)\\tilde O_i + \\tilde P_{ij} V_j,\\qquad O_i = \\mathrm{diag}(\\ell_i)^{-1} \\tilde O_i',
    },
    {
      kind: 'p',
      text: 'Here $\\tilde P_{ij} = \\exp(S_{ij} - m^{\\text{new}}_i)$ uses the new running max, so there is no separate block max. Fewer non-matmul operations matter on GPUs, where a multiply-add on the tensor cores is many times cheaper than one on the ordinary units. Third, FA2 stores one number per row for the backward pass instead of both $m$ and $\\ell$:',
    },
    { kind: 'math', tex: '\\mathrm{LSE}_i = m_i + \\log \\ell_i' },
    {
      kind: 'p',
      text: 'Because each $Q$ block is independent, thread blocks are launched over (batch, head, $Q$ block), which fills the GPU even when batch × heads is small; the FA1 kernel parallelized only over batch and heads.',
    },
    {
      kind: 'erratum',
      text: 'Line 10 of Algorithm 1 in "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning" (arXiv 2307.08691) writes the rescale as $\\mathrm{diag}(e^{m^{(j-1)}_i - m^{(j)}_i})^{-1} O_i$. The inverse is a typo: the accumulator is multiplied by $e^{m^{(j-1)}_i - m^{(j)}_i} \\le 1$, as above and as the kernels do.',
    },
    {
      kind: 'p',
      text: "The two debuggers below run the same problem ($N = 32$, $d = 16$, blocks of 8). Each opens at its first write to HBM: FA1 writes $O_0$ after the very first tile; FA2's first write is the finished, normalized $O_0$. Compare the Counters views at the end.",
    },
  ],
  panes: [
    {
      label: 'FA1',
      preset: fa1Preset,
      target: {
        describe: "FA1's first write of O",
        find: (ev) => firstIndex(ev, (e) => e.kind === 'write' && e.tensors.includes('O') && e.tile.kvBlock >= 0),
      },
      views: ['heatmaps', 'counters', 'pseudo'],
    },
    {
      label: 'FA2',
      preset: lessonRequest('fa2', problem, blocks),
      target: { describe: "FA2's first write of O", find: (ev) => firstIndex(ev, (e) => e.kind === 'write' && e.tensors.includes('O')) },
      views: ['heatmaps', 'stats', 'formula', 'counters', 'pseudo'],
    },
  ],
  tryThis: [
    {
      label: 'N = 64',
      look: "FA1's O traffic grows with the number of K/V blocks; FA2 still writes O once.",
      change: (r) => ({ ...r, problem: { ...r.problem, nq: 64, nk: 64 } }),
    },
    {
      label: 'Causal',
      look: "Both skip blocks above the diagonal; FA2's outer loop over Q blocks makes the skip a shorter inner loop.",
      change: (r) => ({ ...r, problem: { ...r.problem, causal: true } }),
    },
    {
      label: 'K/V blocks of 16',
      look: "FA1 now has half as many K/V blocks, so it reads $Q$ and moves $O$, $\\ell$ and $m$ half as often, while FA2 still reads $K$ and $V$ once per $Q$ block: question 1's ratio falls below 1, and FA1 moves fewer bytes than FA2. FA2's gains on a GPU are fewer non-matmul operations and more parallel thread blocks.",
      change: withKvBlocksOf16,
    },
  ],
  questions: [
    {
      id: 'traffic-ratio',
      prompt: "Divide FA1's total HBM traffic (read plus written) by FA2's, for the problem loaded in the FA1 pane. What is the ratio?",
      kind: 'number',
      tolerance: 0.005,
      answer: ({ run, runOther }) =>
        hbmTotal(run.result.counters) / hbmTotal(runOther({ ...run.request, algorithm: 'fa2' }).result.counters),
      explain: ({ run, runOther }, a) => {
        const fa1 = run.result.counters;
        const fa2 = runOther({ ...run.request, algorithm: 'fa2' }).result.counters;
        return `FA1 moves ${fmtBytes(hbmTotal(fa1))}, FA2 ${fmtBytes(hbmTotal(fa2))}: ${fmt(Number(a), 4)}×. FA1 spends ${fmtBytes(tensorTraffic(fa1, ['Q', 'O', 'l', 'm']))} on Q, O, ℓ and m, once per K/V block; FA2 spends ${fmtBytes(tensorTraffic(fa2, ['K', 'V']))} on K and V, once per Q block.`;
      },
      hint: 'Step both panes to the end and add HBM read and HBM written in each Counters view; the rounded figures are close enough (a tap on one shows its exact bytes).',
    },
    {
      id: 'fa2-o-bytes',
      prompt: 'How many bytes of $O$ does FA2 write to HBM?',
      kind: 'integer',
      shownAs: 'counter',
      answer: ({ run, runOther }) => runOther({ ...run.request, algorithm: 'fa2' }).result.counters.hbmWritten.O ?? 0,
      explain: ({ run }, a) => `${fmtBytes(Number(a))}: each of the ${run.request.problem.nq} rows, once, already divided by ℓ.`,
      hint: "The FA2 pane's Counters view, written column, at the last step.",
    },
    {
      id: 'lse',
      prompt: 'What $\\mathrm{LSE}$ does FA2 store for row 5? Four significant digits are enough.',
      kind: 'number',
      tolerance: 1e-3,
      answer: ({ run, runOther }) => runOther({ ...run.request, algorithm: 'fa2' }).result.lse[5],
      explain: (_c, a) =>
        `$\\mathrm{LSE}_5 = m_5 + \\log \\ell_5$ = ${fmt(Number(a), 6)}. The backward pass recomputes $P = \\exp(S - \\mathrm{LSE})$ from it without storing $P$.`,
      hint: "In the FA2 pane, step to the normalize step of Q block 0 and click row 5 in the Running statistics view: the Formula view then shows row 5's ℓ and LSE.",
    },
  ],
  sources: [
    '"FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", arXiv 2307.08691, §3.1 (Algorithm 1: loop order, deferred normalization, LSE) and §3.2 (parallelism over sequence blocks).',
    'The typo in line 10 of Algorithm 1: Dao-AILab/flash-attention, GitHub issue 991.',
    '"FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", arXiv 2205.14135, §3.1 (Algorithm 1), for the FA1 pane.',
  ],
};
