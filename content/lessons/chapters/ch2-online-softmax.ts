// Chapter 2: safe softmax, then online softmax on one vector (the derivation of §3.1 of the FA2 paper, arXiv 2307.08691).
import type { Chapter } from './types.ts';
import { finalRowSum, firstIndex, fmt, lastMaxChangeBlock } from './queries.ts';
import { lessonRequest } from './queries.ts';

export const chapter2: Chapter = {
  number: 2,
  slug: 'online-softmax',
  title: 'Safe softmax and online softmax',
  summary: 'One vector, element by element: the running max m, the running sum ℓ, and the rescale.',
  blocks: [
    {
      kind: 'p',
      text: 'Softmax of a vector $x_1,\\dots,x_N$ is $e^{x_i} / \\sum_j e^{x_j}$. Computed literally it overflows: $e^{89}$ is already beyond fp32. The safe form subtracts the maximum first, which changes nothing mathematically because the factor $e^{-m}$ cancels:',
    },
    {
      kind: 'math',
      tex: 'm = \\max_j x_j,\\qquad \\ell = \\sum_{j=1}^{N} e^{x_j - m},\\qquad \\mathrm{softmax}(x)_i = \\frac{e^{x_i - m}}{\\ell}',
    },
    {
      kind: 'p',
      text: 'That costs three passes over $x$: one for $m$, one for $\\ell$, one for the quotients. In attention each pass over a row of $S$ means recomputing or re-reading that row. Online softmax fuses the first two passes. Keep a running max $m_i$ and a running sum $\\ell_i$ measured against it:',
    },
    { kind: 'math', tex: 'm_i = \\max(m_{i-1}, x_i),\\qquad \\ell_i = \\ell_{i-1}\\, e^{m_{i-1} - m_i} + e^{x_i - m_i}' },
    {
      kind: 'p',
      text: 'When a new element raises the max, every term already in $\\ell$ was measured against the old max; multiplying the sum by $e^{m_{i-1}-m_i} < 1$ moves all of them to the new one at once. When the max holds, the factor is exactly 1. After the last element, $m_N$ and $\\ell_N$ equal the safe-softmax $m$ and $\\ell$. (Papers write the sum as $d$ or $\\ell$; in this course $d$ is the head dimension, so the sum is $\\ell$ throughout.)',
    },
    {
      kind: 'p',
      text: 'Drag the bars below (or focus one and use the arrow keys). The table follows the recurrence element by element, and the line under it checks the result against the three-pass softmax.',
    },
    { kind: 'widget', widget: 'online-softmax' },
    {
      kind: 'p',
      text: "A kernel applies the same recurrence to blocks of columns instead of single elements: the max of a whole tile enters at once, and one factor rescales the sum. The debugger runs FA2 on 16 queries and 64 keys in blocks of 8; the Running statistics view lists each row's $m$ and $\\ell$ so far, the rescale factor $e^{m_{old}-m_{new}}$ in orange where this block raised the max, and a line of $m$ over the K/V blocks seen so far. It opens at the first step where a row's max grows after the first block.",
    },
  ],
  panes: [
    {
      preset: lessonRequest('fa2', { nq: 16, nk: 64, d: 16 }, { blockM: 8, blockN: 8 }),
      target: {
        describe: 'the first rowmax step where a running max grows after the first K/V block',
        find: (ev) => firstIndex(ev, (e) => e.kind === 'rowmax' && e.tile.kvBlock > 0 && e.mAfter.some((m, r) => m > e.mBefore[r])),
        fallback: {
          describe: 'the first rowmax step (no running max grows after the first block in this problem)',
          find: (ev) => firstIndex(ev, (e) => e.kind === 'rowmax'),
        },
      },
      views: ['heatmaps', 'stats', 'formula', 'pseudo'],
    },
  ],
  tryThis: [
    {
      label: 'Large logits',
      look: 'With wider score ranges the max keeps moving for longer, and the rescale factors get far from 1.',
      change: (r) => ({ ...r, distribution: 'large-logits' }),
    },
    {
      label: 'Smaller K/V blocks (Bc = 4)',
      look: "Twice as many updates per row, yet row 0's final $\\ell$ (question 2) comes out the same: the recurrence does not care how the row is cut.",
      change: (r) => ({ ...r, blocks: { ...r.blocks, blockN: 4 } }),
    },
    {
      label: 'Another seed',
      look: 'New scores, new blocks where the max moves; the final $\\ell$ is still the full softmax sum.',
      change: (r) => ({ ...r, seed: r.seed + 6 }),
    },
  ],
  questions: [
    {
      id: 'last-change',
      prompt: "At which K/V block (counting from 0) does row 3's running max $m$ change for the last time?",
      kind: 'integer',
      answer: ({ run }) => lastMaxChangeBlock(run.events, 3),
      explain: ({ run }, a) => {
        const blocks = Math.ceil(run.request.problem.nk / run.result.blocks.blockN);
        return Number(a) === blocks - 1
          ? `Block ${a}, the last one, holds row 3's largest score: the max moved one final time there.`
          : `Block ${a} holds row 3's largest score; the rowmax of every later block is smaller, so m stays and those blocks' rescale factors are exactly 1.`;
      },
      hint: "Step to the end of Q block 0 (» jumps one K/V block) and look at row 3's line of m in the Running statistics view: an orange dot marks each block where m grew, the line's points are blocks 0, 1, 2, … from the left.",
    },
    {
      id: 'final-l',
      prompt:
        "What is row 0's running sum $\\ell$ after its last K/V block (before the output is divided by it)? Four significant digits are enough.",
      kind: 'number',
      tolerance: 1e-3,
      answer: ({ run }) => finalRowSum(run.events, 0),
      explain: (_c, a) =>
        `$\\ell_0$ = ${fmt(Number(a), 6)}: the sum of $e^{s_{0j} - m_0}$ over all keys $j$ of row 0, measured against its final max $m_0$. It is at least 1, because the max element contributes $e^0 = 1$.`,
      hint: 'Step to the last rowsum of Q block 0 and read $\\ell$ (the column headed l) for row 0 in the Running statistics view.',
    },
  ],
  sources: [
    'Online softmax: "Online normalizer calculation for softmax", arXiv 1805.02867, §3 (Algorithm 3).',
    'The same recurrence inside attention: "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", arXiv 2307.08691, §3.1.',
  ],
};
