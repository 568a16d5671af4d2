// Chapter 9: flash-decoding — split K/V and the LSE combine.
import type { Chapter } from './types.ts';
import { firstIndex, fmt, lessonRequest, type EventOf } from './queries.ts';
import type { TraceEvent } from '../../../engine/api.ts';

const combineOf = (ev: readonly TraceEvent[]) => ev.find((e): e is EventOf<'combine'> => e.kind === 'combine');
const H100 = 'h100';

export const chapter9: Chapter = {
  number: 9,
  slug: 'flash-decoding',
  title: 'Flash-decoding: split K/V and the LSE combine',
  summary: 'One query, a long cache: cut the keys into splits and merge the partial softmaxes exactly.',
  blocks: [
    {
      kind: 'p',
      text: 'When a model generates text, each new token is one query against the whole K/V cache: $N_q = 1$, $N_k$ in the thousands. FA2 parallelizes over batch, heads and $Q$ blocks — here only batch × heads thread blocks, far fewer than the GPU has SMs, each walking a very long loop.',
    },
    {
      kind: 'p',
      text: 'Flash-decoding cuts the keys into $s$ contiguous splits and runs FA2 on each split as a separate thread block. Split $k$ produces a partial output $O_k$, already divided by its own sum, and its log-sum-exp $\\mathrm{LSE}_k$. A second, tiny kernel merges them:',
    },
    {
      kind: 'math',
      tex: '\\mathrm{LSE} = \\log \\sum_k e^{\\mathrm{LSE}_k},\\qquad O = \\sum_k e^{\\mathrm{LSE}_k - \\mathrm{LSE}}\\, O_k',
    },
    {
      kind: 'p',
      text: "This is exact, not an approximation: $e^{\\mathrm{LSE}_k}$ is split $k$'s softmax denominator (against max 0), so the weights $e^{\\mathrm{LSE}_k - \\mathrm{LSE}}$ are each split's share of the total, the same merge chapter 3 does block by block, done once across blocks. The combine computes the outer log-sum-exp against $\\max_k \\mathrm{LSE}_k$, so nothing overflows.",
    },
    {
      kind: 'p',
      text: 'The number of splits comes from an occupancy heuristic: enough splits to fill the SMs in nearly whole waves. The debugger runs one query against 256 keys in 4 splits and opens at the combine step, where the Formula view shows the merged LSE and the weight of each split, $w_k = e^{\\mathrm{LSE}_k - \\mathrm{LSE}}$; the toggle switches between 4 splits and 1 (no combine at all). The table runs the hardware model for a long cache on an H100.',
    },
  ],
  panes: [
    {
      preset: lessonRequest(
        'flash-decoding',
        { nq: 1, nk: 256, d: 16, dtype: 'bf16' },
        { blockM: 64, blockN: 32 },
        { features: { splits: 4 } },
      ),
      target: {
        describe: 'the combine of the split results',
        find: (ev) => firstIndex(ev, (e) => e.kind === 'combine'),
        fallback: { describe: 'the normalize step (one split: no combine)', find: (ev) => firstIndex(ev, (e) => e.kind === 'normalize') },
      },
      views: ['heatmaps', 'stats', 'formula', 'counters'],
    },
  ],
  toggles: [
    {
      feature: 'splits',
      label: 'Split K/V (4 splits)',
      on: 4,
      off: 1,
      kernelDefault: 0,
      explain: 'Off: one split, which writes O and LSE directly.',
    },
  ],
  hardware: {
    caption: 'Simulated H100 decoding time, hardware model (engine/hw)',
    shapeNote: 'batch 1, 32 heads, 1 query, 32 768 keys, d = 128, bf16',
    shape: { batch: 1, hq: 32, hk: 32, nq: 1, nk: 32768, d: 128, dv: 128, dtype: 'bf16', causal: false },
    rows: [
      { algorithm: 'flash-decoding', gpu: H100, features: { splits: 1 }, label: '1 split (FA2 as is)' },
      { algorithm: 'flash-decoding', gpu: H100, features: {}, label: 'splits from the heuristic' },
    ],
  },
  reference: ['flash-decoding'],
  tryThis: [
    {
      label: '8 splits',
      look: 'Eight partial results, eight terms in the combine; the output does not change.',
      change: (r) => ({ ...r, features: { ...r.features, splits: 8 } }),
    },
    {
      label: 'Causal (query at the end)',
      look: 'A single query at the end of the sequence sees every key; nothing is masked.',
      change: (r) => ({ ...r, problem: { ...r.problem, causal: true } }),
    },
  ],
  questions: [
    {
      id: 'lse',
      prompt: 'What is the merged $\\mathrm{LSE}$ of the query? Four significant digits are enough.',
      kind: 'number',
      tolerance: 1e-3,
      answer: ({ run }) => run.result.lse[0],
      explain: (_c, a) =>
        `LSE = ${fmt(Number(a), 6)}: the log of the row's softmax denominator, the same whether it is computed in one pass or merged from splits (switch the splits off and the normalize step gives it too).`,
      hint: 'Step to the combine (or, with one split, the normalize) step and read the LSE in the Formula view.',
    },
    {
      id: 'split-lse',
      prompt:
        "The Formula view at the combine gives the merged $\\mathrm{LSE}$ and each split's weight $w_k$, but not the splits' own $\\mathrm{LSE}_k$. What is $\\mathrm{LSE}_k$ of the split with the smallest weight? With one split, its LSE is the merged one. Three decimals are enough.",
      kind: 'number',
      tolerance: 1e-3,
      answer: ({ run }) => {
        const c = combineOf(run.events);
        if (!c) return run.result.lse[0];
        const lse = c.splitLse[0];
        return Math.min(...lse);
      },
      explain: ({ run }, a) => {
        const c = combineOf(run.events);
        if (!c)
          return `One split: its partial result is the answer, with weight 1, and its LSE is the merged ${fmt(run.result.lse[0], 5)}.`;
        const w = c.splitLse[0].map((l) => Math.exp(l - c.lse[0]));
        const k = c.splitLse[0].indexOf(Number(a));
        return `${fmt(Number(a), 5)} (split ${k}): w = e^(LSE_k − LSE) gives LSE_k = LSE + ln w_k = ${fmt(c.lse[0], 5)} + ln ${fmt(w[k], 4)}. A split's weight is its share of the softmax denominator: its keys' e^s add up to e^(LSE_k), the whole row's to e^(LSE). The weights here are ${w.map((x) => fmt(x, 3)).join(', ')}; they add up to 1.`;
      },
      hint: 'Solve w = e^(LSE_k − LSE) for LSE_k, with the smallest w the Formula view lists.',
    },
    {
      id: 'speedup',
      prompt: 'In the hardware table, how many times faster is the split version than one split?',
      kind: 'number',
      tolerance: 0.01,
      answer: ({ simulate }) => simulate('flash-decoding', H100, { splits: 1 }).timeUs / simulate('flash-decoding', H100, {}).timeUs,
      explain: ({ simulate }, a) => {
        const one = simulate('flash-decoding', H100, { splits: 1 });
        const many = simulate('flash-decoding', H100, {});
        return `${fmt(Number(a), 4)}×: with one split only ${one.smsBusy} of the H100's ${one.smCount} SMs have work; with the heuristic's splits, ${many.smsBusy}.`;
      },
      hint: 'Divide the one-split time by the heuristic-splits time.',
    },
  ],
  sources: [
    'Flash-decoding: T. Dao, D. Haziza, F. Massa, G. Sizov, "Flash-Decoding for long-context inference", PyTorch blog, October 2023 (split K/V, then a reduction by log-sum-exp).',
    "The split heuristic and the combine kernel: Dao-AILab/flash-attention, hopper/heuristics.h@0251105a, l. 19–60 (num_splits_heuristic: the fewest splits within 85% of the best efficiency), and hopper/flash_fwd_combine_kernel.h@0251105a, l. 594–624 (the splits' LSEs merged by max, sum and log; each split weighted by exp(LSE_s − LSE)).",
  ],
};
