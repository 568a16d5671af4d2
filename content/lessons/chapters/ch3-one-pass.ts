// Chapter 3: from online softmax to one-pass attention — the O recurrence.
import type { Chapter } from './types.ts';
import { covers, firstIndex, fmt, fmtScientific, lessonRequest, type EventOf } from './queries.ts';
import type { LoadRequest, TraceEvent } from '../../../engine/api.ts';

const shrinks = (e: TraceEvent): e is EventOf<'rescale'> => e.kind === 'rescale' && e.factor.some((f) => f < 1);
const target = (ev: readonly TraceEvent[]) => firstIndex(ev, shrinks);

const preset = lessonRequest('fa2', { nq: 16, nk: 32, d: 8 }, { blockM: 8, blockN: 8 });
const withOutlierRow = (r: LoadRequest): LoadRequest => ({ ...r, distribution: 'outlier-row' });
/** The row the outlier-row inputs scale (the middle one unless the request names another). */
const outlierRowOf = (r: LoadRequest) => Math.min(r.outlierRow ?? Math.floor(r.problem.nq / 2), r.problem.nq - 1);

export const chapter3: Chapter = {
  number: 3,
  slug: 'one-pass-attention',
  title: 'One-pass attention: the O recurrence',
  summary: 'Carry the output along with m and ℓ, and fix it up with the same factor.',
  blocks: [
    {
      kind: 'p',
      text: 'Online softmax still needs a second pass to form the probabilities. Attention does not need the probabilities themselves, only their weighted sum of value rows. That sum can ride along with $m$ and $\\ell$. Keep an unnormalized accumulator per query row:',
    },
    { kind: 'math', tex: '\\tilde o_i = \\tilde o_{i-1}\\, e^{m_{i-1} - m_i} + e^{x_i - m_i}\\, v_i,\\qquad o = \\tilde o_N / \\ell_N' },
    {
      kind: 'p',
      text: 'Every term in $\\tilde o$ carries a factor $e^{x_j - m}$ for the current max, exactly like the terms of $\\ell$; when the max grows, one multiplication by $e^{m_{i-1}-m_i}$ moves them all. Division by $\\ell$ happens once, at the end. No second pass over the keys, and nothing of size $N\\times N$ is ever stored: this is why attention admits a one-pass algorithm even though softmax alone does not.',
    },
    {
      kind: 'p',
      text: 'With tiles, $x_i$ becomes a block of scores $S_{ij}$ and $v_i$ becomes the block $V_j$:',
    },
    {
      kind: 'math',
      tex: 'm^{\\text{new}} = \\max\\big(m,\\ \\mathrm{rowmax}(S_{ij})\\big),\\qquad \\tilde O \\leftarrow \\mathrm{diag}\\big(e^{m - m^{\\text{new}}}\\big)\\,\\tilde O + \\exp(S_{ij} - m^{\\text{new}})\\, V_j',
    },
    {
      kind: 'p',
      text: "The debugger opens at the first rescale step where some factor is below 1: those rows' accumulators shrink because a larger score arrived in this block. The Formula view shows the factor for the selected row (row 0 until you click another row's number in the Running statistics view); the O heatmap shows the rows being fixed up.",
    },
  ],
  panes: [
    {
      preset,
      target: {
        describe: 'the first rescale step with a factor below 1',
        find: target,
        fallback: {
          describe: 'the first rescale step (no factor is below 1 in this problem)',
          find: (ev) => firstIndex(ev, (e) => e.kind === 'rescale'),
        },
      },
      views: ['heatmaps', 'stats', 'formula', 'pseudo'],
    },
  ],
  tryThis: [
    {
      label: 'Causal mask',
      look: 'Rows near the top see only a few keys; blocks entirely above the diagonal are skipped, and so are their rescales.',
      change: (r) => ({ ...r, problem: { ...r.problem, causal: true } }),
    },
    {
      label: 'One outlier row',
      look: 'Query row {{outlier-row}} is made 30 times larger, and so are its scores. Its max moves once after the first block, at K/V block {{outlier-block}} of Q block {{outlier-qblock}}: step there and its rescale factor is {{outlier-factor}} — what it had summed almost vanishes next to the new largest term.',
      change: withOutlierRow,
    },
    {
      label: 'K/V blocks of 4',
      look: 'More blocks, more chances for the max to move: count the rescales again.',
      change: (r) => ({ ...r, blocks: { ...r.blocks, blockN: 4 } }),
    },
  ],
  questions: [
    {
      id: 'smallest-factor-row',
      prompt:
        'At the step the debugger opened on (the first rescale with a factor below 1), which row — its index in the whole matrix — has its accumulator shrunk the most?',
      kind: 'integer',
      answer: ({ run }) => {
        const i = target(run.events);
        const e = run.events[i];
        if (i < 0 || e.kind !== 'rescale') return -1;
        let best = 0;
        e.factor.forEach((f, r) => {
          if (f < e.factor[best]) best = r;
        });
        return e.tile.rows[0] + best;
      },
      explain: ({ run }, a) => {
        if (Number(a) < 0)
          return 'No row is shrunk in this problem: −1 is the answer the lesson expects then. Load the preset again to see one.';
        const e = run.events[target(run.events)] as EventOf<'rescale'>;
        const r = Number(a) - e.tile.rows[0];
        return `Row ${a}: its max moved from ${fmt(e.mOld[r])} to ${fmt(e.mNew[r])}, so its accumulator is multiplied by $e^{${fmt(e.mOld[r])} - ${fmt(e.mNew[r])}}$ = ${fmt(e.factor[r])}.`;
      },
      hint: 'The smallest factor belongs to the row whose max jumped the most. Click rows in the Running statistics view and read the factor in the Formula view.',
    },
    {
      id: 'shrink-count',
      prompt: "Over the whole run, how many times is a row's accumulator multiplied by a factor below 1?",
      kind: 'integer',
      answer: ({ run }) => run.events.reduce((n, e) => n + (e.kind === 'rescale' ? e.factor.filter((f) => f < 1).length : 0), 0),
      explain: (_c, a) =>
        `${a} row updates had a new, larger max. Every other rescale multiplied by exactly 1 — work a kernel can skip, as FA4 does (chapter 8).`,
      hint: "Count, per rescale step, the rows whose factor is below 1 — or, at the last step of each Q block, count the orange dots on the m lines of the Running statistics view (one per block where a row's max grew).",
    },
  ],
  facts: (run): Record<string, string> => {
    const req = withOutlierRow(preset);
    const row = outlierRowOf(req);
    const e = run(req).events.find((x): x is EventOf<'rescale'> => shrinks(x) && covers(x, row) && x.factor[row - x.tile.rows[0]] < 1);
    if (!e) return {};
    return {
      'outlier-row': String(row),
      'outlier-qblock': String(e.tile.qBlock),
      'outlier-block': String(e.tile.kvBlock),
      'outlier-factor': fmtScientific(e.factor[row - e.tile.rows[0]]),
    };
  },
  sources: [
    'The O recurrence: "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", arXiv 2307.08691, §3.1.',
  ],
};
