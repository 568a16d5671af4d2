// Chapter 1: standard attention and the HBM traffic of its N×N intermediates.
import type { Chapter } from './types.ts';
import { firstIndex, fmt, fmtBytes, lessonRequest, tensorTraffic } from './queries.ts';
import { dtypeBytes, type Counters, type LoadRequest } from '../../../engine/api.ts';

// Standard attention walks Q in row blocks and always takes every key at once: no Bc to set.
const preset = lessonRequest('standard', { nq: 32, nk: 32, d: 16 }, { blockM: 8 });
const fp16 = (r: LoadRequest): LoadRequest => ({ ...r, problem: { ...r.problem, dtype: 'fp16' } });
/** Bytes that moved S and P over the bytes that moved Q, K, V and O. */
const intermediateRatio = (c: Counters) => tensorTraffic(c, ['S', 'P']) / tensorTraffic(c, ['Q', 'K', 'V', 'O']);

export const chapter1: Chapter = {
  number: 1,
  slug: 'standard-attention',
  title: 'Standard attention and its N×N traffic',
  summary: 'Three passes over HBM, and why S and P cost more than Q, K, V and O together.',
  blocks: [
    {
      kind: 'p',
      text: 'Attention turns each query into a weighted average of value vectors. For one head with $N$ queries and keys of width $d$ the textbook recipe has three stages:',
    },
    {
      kind: 'math',
      tex: 'S = \\tau\\, Q K^{\\top} \\in \\mathbb{R}^{N\\times N},\\qquad P = \\mathrm{softmax}(S)\\ \\text{(row by row)},\\qquad O = P V \\in \\mathbb{R}^{N\\times d}',
    },
    {
      kind: 'p',
      text: 'Here $\\tau = 1/\\sqrt{d}$. A GPU kernel cannot keep an $N\\times N$ matrix on chip, so each stage is its own pass: the first writes all of $S$ to HBM, the second reads $S$ back, takes the row max and sum and writes $P$, the third reads $P$ and $V$ and writes $O$.',
    },
    {
      kind: 'p',
      text: 'Count the bytes. $Q$, $K$, $V$ and $O$ are $N\\times d$ each, so they move $\\Theta(Nd)$ bytes. $S$ and $P$ are $N\\times N$: written once and read once each, $\\Theta(N^2)$. When $N$ is much larger than $d$ — every real model — the intermediates dominate the traffic, and the arithmetic waits on memory.',
    },
    {
      kind: 'p',
      text: 'The debugger below runs exactly these passes on a $32\\times 32$ problem with $d = 16$. It is stopped at the first write of an $S$ tile to HBM. Step forward and watch the Counters view: the S and P figures in its HBM rows grow tile by tile while Q, K and V stay small.',
    },
  ],
  panes: [
    {
      preset,
      target: {
        describe: 'the first S tile written to HBM',
        find: (ev) => firstIndex(ev, (e) => e.kind === 'write' && e.tensors.includes('S')),
      },
      views: ['heatmaps', 'counters', 'pseudo'],
    },
  ],
  tryThis: [
    {
      label: 'Double N to 64',
      look: 'The S and P bytes grow four times, Q, K, V and O only twice: the ratio in question 2 doubles.',
      change: (r) => ({ ...r, problem: { ...r.problem, nq: 64, nk: 64 } }),
    },
    {
      label: 'Make the head wider (d = 64)',
      look: 'Q, K, V and O grow with $d$; S and P do not depend on $d$ at all, so their share falls.',
      change: (r) => ({ ...r, problem: { ...r.problem, d: 64, dv: 64 } }),
    },
    {
      label: 'Store in fp16',
      look: 'Q, K, V, O and P halve in bytes, but S stays fp32: the scores come out of the matmul accumulator. The ratio grows by half: from {{ratio-fp32}} to {{ratio-fp16}} on the problem the chapter opens with.',
      change: fp16,
    },
  ],
  questions: [
    {
      id: 's-bytes',
      prompt: 'How many bytes of $S$ did this run write to HBM in total?',
      kind: 'integer',
      shownAs: 'counter',
      answer: ({ run }) => run.result.counters.hbmWritten.S ?? 0,
      explain: ({ run }, a) => {
        const p = run.request.problem;
        // The scores leave the matmul in fp32 whatever the inputs are stored in.
        const sBytes = Number(a) / (p.nq * p.nk * p.batch * p.hq);
        return `${p.nq} × ${p.nk} scores × ${sBytes} bytes (${sBytes === dtypeBytes(p.dtype) ? p.dtype : 'fp32, the accumulator'}) × ${p.batch * p.hq} head(s) = ${fmtBytes(Number(a))}. Every score makes the round trip.`;
      },
      hint: 'Open the Counters view after the last step (tap a figure for the exact bytes), or count: one number per (query, key) pair, times the bytes of each.',
    },
    {
      id: 'ratio',
      prompt:
        'Divide the HBM bytes that moved $S$ and $P$ (read plus written) by the bytes that moved $Q$, $K$, $V$ and $O$. What is the ratio?',
      kind: 'number',
      tolerance: 0.01,
      answer: ({ run }) => intermediateRatio(run.result.counters),
      explain: ({ run }, a) => {
        const c = run.result.counters;
        const p = run.request.problem;
        return `${fmtBytes(tensorTraffic(c, ['S', 'P']))} for S and P against ${fmtBytes(tensorTraffic(c, ['Q', 'K', 'V', 'O']))} for Q, K, V and O: ratio ${fmt(Number(a), 4)}. S and P grow like N², the others like N·d, so the ratio grows like N/d (here ${p.nk}/${p.d}).`;
      },
      hint: 'Use the Counters view at the last step: add the read and written bytes of S and P, then of Q, K, V and O.',
    },
  ],
  facts: (run) => ({
    'ratio-fp32': fmt(intermediateRatio(run(preset).result.counters), 3),
    'ratio-fp16': fmt(intermediateRatio(run(fp16(preset)).result.counters), 3),
  }),
  sources: [
    'Standard attention as three passes over HBM: "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", arXiv 2205.14135, §2.2 (Algorithm 0).',
  ],
};
