// Chapter 13: low precision inside attention — the P values the e4m3 cast before P·V flushes,
// and SageAttention's INT8 scores with K smoothing. Every figure in the text is computed by the
// engine when shown.
import type { Chapter } from './types.ts';
import { fmt, type EventOf } from './queries.ts';
import type { LoadRequest, TraceEvent } from '../../../engine/api.ts';
import { firstQk, K_OFFSET, SAGE_PRESET, SMOOTH_PROBLEM, smoothingRow, smoothingTable } from './k-smoothing.ts';
import { firstFlush, flushTable, SINK_PRESET } from './low-precision.ts';

const sci = (x: number) => x.toExponential(2);

/** The FA3 changes leave the SageAttention pane as it is: sage has no such switches and takes no FP8 dtype. */
const fa3Only = (change: (r: LoadRequest) => LoadRequest) => (r: LoadRequest) => (r.algorithm === 'fa3' ? change(r) : r);

/** The first exp step of the first pane's head and Q tile: the first K/V block its loop visits. */
const firstExpOf = (ev: readonly TraceEvent[]) =>
  ev.find((x): x is EventOf<'exp'> => x.kind === 'exp' && x.b === 0 && x.h === 0 && x.tile.qBlock === 0);

const pExpOf = (ev: readonly TraceEvent[], i: number) => {
  const x = ev[i];
  return x?.kind === 'exp' ? x : undefined;
};

export const chapter13: Chapter = {
  number: 13,
  slug: 'low-precision-softmax-int8',
  title: 'Low precision: the P cast and INT8 scores',
  summary: 'The P values the e4m3 cast flushes to zero and how FA3 keeps them, then SageAttention’s INT8 Q·Kᵀ and its K smoothing.',
  blocks: [
    {
      kind: 'p',
      text: 'Chapter 12 quantized the inputs of the first FP8 matmul. This chapter follows the two places where precision is lost inside attention itself: the cast of $P$ before the second matmul, and — in SageAttention — scores computed from 8-bit integers.',
    },
    { kind: 'h', text: 'Where P loses precision' },
    {
      kind: 'p',
      text: "The second FP8 matmul is $O \\mathrel{+}= PV$, so $P$ must be cast to e4m3 first. In the online softmax $P_{ij} = e^{S_{ij} - m_i}$ with $m_i$ the row's running max, so every $P$ is at most 1 — and everything at or below $2^{-10}$, a score about 6.9 below the max, would flush to zero. FA3's kernel avoids much of that with a static factor: it subtracts $m_i - 8$ in base 2, which multiplies $P$ by $2^8 = 256$ before the cast (the row sum $\\ell$ uses the fp32 $P$, and the factor is divided out at the end). FlashScope's **pScale** switch is that factor.",
    },
    {
      kind: 'p',
      text: "Which $P$ values are small depends on the max they are measured against, and that depends on the order of the K/V blocks. With **attention sinks** — a few keys, usually the first tokens, that every query scores highly — a loop that starts with the sinks fixes $m_i$ at the sink logit from the first block on, and every later $P$ is measured against it. FA3 walks the K/V blocks from last to first, so the sinks come last, and the other keys' $P$ are first computed against their own, smaller max and rescaled later in fp32. The first pane is a sink pattern (4 sink keys, 16 queries, 64 keys, $d = 32$) with the sinks first and pScale 1. The counts below are the non-sink $P$ values that are positive in fp32 and zero after the cast:",
    },
    {
      kind: 'live',
      label: 'P values flushed by the cast',
      compute: (run) => {
        const rows = flushTable(run);
        return {
          text: `The same ${SINK_PRESET.problem.nq} × ${SINK_PRESET.problem.nk} sink problem under both orders and both scales (the sink keys' own P values are excluded: a sink is the row's max, its P is 1).`,
          table: {
            head: ['K/V order and P scale', 'non-sink P flushed to 0', 'of non-sink P > 0'],
            rows: rows.map((r) => [r.label, String(r.count.flushed), String(r.count.positive)]),
          },
        };
      },
    },
    {
      kind: 'p',
      text: 'The first pane\'s Precision view counts them as the run goes: its "Flushed by step" chart has one bar per cast, and the line under it gives the P values flushed so far in this head and in the whole run. The $|P - P_{64}|$ heatmap of the view and the P heatmap of the tile heatmaps ring every flushed value, from the step that flushed it on; the line above the error heatmaps gives the current tile\'s count.',
    },
    { kind: 'goto', pane: 0, label: 'the first exp step where the cast flushes P values', find: firstFlush },
    {
      kind: 'goto',
      pane: 0,
      label: 'the P·V step that reads that cast P',
      find: (ev) => {
        const i = firstFlush(ev);
        if (i < 0) return -1;
        const t = ev[i].tile;
        return ev.findIndex((x, j) => j > i && x.kind === 'pv' && x.tile.qBlock === t.qBlock && x.tile.kvBlock === t.kvBlock);
      },
    },
    {
      kind: 'p',
      text: "A flushed $P$ is a key whose value never reaches $O$ although $\\ell$ counts it: the row's output loses that key's contribution but is still divided by a sum that includes it; one such value is harmless, hundreds of them per row over a long context are not. Switch the K/V order or pScale in \"Try this\" and watch the first pane's Precision view: the ringed cells and the bars of the flush chart thin out as the table says.",
    },
    { kind: 'h', text: 'INT8 scores: SageAttention and K smoothing' },
    {
      kind: 'p',
      text: "SageAttention takes another road for the first matmul: $Q$ and $K$ become **INT8** codes with one scale per block, $\\delta = \\max|x| / 127$, the products of codes are summed exactly in INT32, and one multiply by $\\delta_Q \\delta_K$ turns each sum into a score. INT8's grid is evenly spaced, so every entry of a block, small or large, is rounded to the same step $\\delta$; in FP8 an entry's error follows its own size. That makes a common offset expensive. The keys of trained models often have channels with a large offset shared by every token, and one such channel sets $\\delta_K$ for its whole block, leaving the part of $K$ that differs from key to key only a few steps.",
    },
    {
      kind: 'math',
      tex: '\\bar k = \\frac{1}{N}\\sum_{j} K_j,\\qquad q_i\\,(K_j - \\bar k)^{\\top} = q_i K_j^{\\top} - q_i \\bar k^{\\top}',
    },
    {
      kind: 'p',
      text: "SageAttention therefore **smooths** $K$: it subtracts $\\bar k$, the mean of $K$ over the tokens, before quantizing. Every score of query row $i$ then moves by the same amount, $q_i \\cdot \\bar k$ (times $\\tau$), and a softmax does not see a shift shared by its whole row: $e^{s_j - c} / \\sum_l e^{s_l - c} = e^{s_j} / \\sum_l e^{s_l}$. $P$ and $O$ are the same in exact arithmetic; only the log-sum-exp needs $q_i \\cdot \\bar k\\,\\tau$ added back, and SageAttention's wrapper does that. What changes is what is left to quantize: $K - \\bar k$ has only the spread of the keys around their mean, so $\\delta_K$ shrinks, and the rounding error of every entry with it. FlashScope's sage has the switch (smoothK); the engine measures both settings on keys whose channels are shifted by constants drawn from $\\pm 20$:",
    },
    {
      kind: 'live',
      label: 'K smoothing on INT8 keys',
      compute: () => {
        const rows = smoothingTable();
        const off = smoothingRow(false);
        const on = smoothingRow(true);
        const p = SMOOTH_PROBLEM;
        return {
          text: `SageAttention version 1 (INT8 Q·Kᵀ, FP16 P·V), N = ${p.nq}, d = ${p.d}, fp16, K blocks of 64 keys; $Q$, $K$, $V$ drawn from N(0,1), then every channel of $K$ shifted by its own constant in ±${K_OFFSET}. Smoothing makes K's largest INT8 step ${fmt(off.kStep / on.kStep, 3)}× finer; the last two columns give what that does to O.`,
          table: {
            head: ['K smoothing', 'largest δ_K', 'RMS error of K', 'RMSE of O', 'max |error| of O'],
            rows: rows.map((r) => [r.label, sci(r.kStep), sci(r.kRms), sci(r.rmse), sci(r.maxAbs)]),
          },
        };
      },
    },
    {
      kind: 'p',
      text: 'The second pane steps sage (version 1) on an ordinary fp16 problem, smoothing off. At its S step the Precision view\'s tile line gives the tile\'s Q and K scales, which are the INT8 steps $\\delta_Q$ and $\\delta_K$ (version 1 multiplies $Q$ by $\\tau \\log_2 e$ before quantizing, so $\\delta_Q$ carries that factor too), and the $|S - S_{64}|$ heatmap shows what the integer scores lost (in log2 units). With smoothing on ("SageAttention with K smoothing" in "Try this") every score of row $i$ is smaller by $q_i \\cdot \\bar k\\,\\tau$, which the softmax ignores; the view shifts its float64 scores by the same amount (the trace names each row\'s shift), so $|S - S_{64}|$ still shows only what the integer scores lost. On outlier inputs like those of chapter 12 smoothing barely helps: an outlier is one entry, not a channel offset.',
    },
    { kind: 'goto', pane: 1, label: "SageAttention's first S = QKᵀ, from INT8 codes", find: firstQk },
  ],
  panes: [
    {
      label: 'P cast on a sink pattern',
      preset: SINK_PRESET,
      target: {
        describe: 'the first exp step where the e4m3 cast flushes P values to zero',
        find: firstFlush,
        fallback: {
          describe: 'the first exp step (no P value flushes in this problem)',
          find: (ev) => ev.findIndex((x) => x.kind === 'exp'),
        },
      },
      views: ['heatmaps', 'precision', 'formula'],
    },
    {
      label: 'INT8 Q·Kᵀ (SageAttention)',
      preset: SAGE_PRESET,
      target: { describe: 'the first S = QKᵀ: an exact INT8 dot product, times δ_Q·δ_K', find: firstQk },
      views: ['heatmaps', 'precision', 'formula'],
    },
  ],
  reference: ['fa3', 'sage'],
  tryThis: [
    {
      label: 'FA3’s K/V order (last to first)',
      look: 'In the first pane the sinks now come last: far fewer $P$ values flush at the exp steps.',
      change: fa3Only((r) => ({ ...r, features: { ...r.features, reverseKv: true } })),
    },
    {
      label: 'P scaled by 256 before the cast',
      look: "FA3's static factor: $P \\cdot 256$ keeps values down to $2^{-18}$, so far fewer $P$ values flush (the table in the text gives the counts).",
      change: fa3Only((r) => ({ ...r, features: { ...r.features, pScale: 256 } })),
    },
    {
      label: 'SageAttention with K smoothing',
      look: "In the second pane's Precision view, $|S - S_{64}|$ stays at the size of the INT8 steps: every score of row $i$ moved by the same $q_i \\cdot \\bar k\\,\\tau$, and the view compares against float64 scores moved alike. Its δ_K (tile line) barely changes: these keys have no large offset to remove.",
      change: (r) => (r.algorithm === 'sage' ? { ...r, features: { ...r.features, smoothK: true } } : r),
    },
  ],
  questions: [
    {
      id: 'flush-step-count',
      prompt: 'At the exp step the first pane opens at, how many $P$ values of the tile were flushed by the cast?',
      kind: 'integer',
      answer: ({ run }) => pExpOf(run.events, firstFlush(run.events))?.flushed?.length ?? 0,
      explain: ({ run }, a) => {
        const x = pExpOf(run.events, firstFlush(run.events));
        if (!x) return '0: no exp step of the loaded problem flushes a P value, so the pane opens at the first exp step.';
        const against =
          x.tile.kvBlock === 0
            ? "each measured against the sinks' logit: the sinks are keys 0–3 of this very block"
            : run.request.features?.reverseKv === true
              ? 'each measured against the largest score of the blocks visited so far, the sinks not among them'
              : "each measured against the sinks' logit: the sinks of block 0 set the max before this block";
        return `${a}, in K block ${x.tile.kvBlock} (keys ${x.tile.cols[0]}…${x.tile.cols[1] - 1}), ${against}. A P value flushes when it is at or below 2⁻¹⁰, a score about 6.9 below that max.`;
      },
      hint: 'The first pane\'s Precision view gives it in the line above its error heatmaps ("flushed P" of this tile so far); the ringed cells of its P heatmaps are the same values.',
    },
    {
      id: 'first-block-flush',
      prompt:
        'Load **FA3’s K/V order** (Try this), so that the sinks’ block comes last. How many $P$ values does the cast flush at the first pane’s first exp step, now on K block 3?',
      kind: 'integer',
      answer: ({ run }) => firstExpOf(run.events)?.flushed?.length ?? 0,
      explain: ({ run }, a) => {
        const ev = run.events;
        const first = firstExpOf(ev);
        const sinks = ev.find(
          (x): x is EventOf<'exp'> => x.kind === 'exp' && x.b === 0 && x.h === 0 && x.tile.qBlock === 0 && x.tile.kvBlock === 0,
        );
        if (!first || !sinks) return 'This run has no exp step on the first pane.';
        if (first.tile.kvBlock === 0)
          return `${a}, on K block 0: in the loaded run the sinks still come first, so this is their own block. Load FA3’s K/V order and step to the first exp step again.`;
        return `${a}, on K block ${first.tile.kvBlock}: its P are measured against the max of its own keys, not the sinks' logit, so only values far below that max flush. The sinks' block 0 now comes last and still flushes ${sinks.flushed?.length ?? 0}: inside it every P is measured against the sinks whatever the order, and the order only spares the other blocks.`;
      },
      hint: 'Step the first pane to its first exp step (the step line reads "P = e^(S − m)") and read "flushed P" in the line above the Precision view\'s error heatmaps.',
    },
    {
      id: 'smoothk-factor',
      prompt:
        'In the K smoothing table (SageAttention, keys shifted per channel), by what factor does K smoothing lower the RMSE of $O$ against float64 (off divided by on)? Two decimals are enough.',
      kind: 'number',
      tolerance: 0.01,
      answer: () => smoothingRow(false).rmse / smoothingRow(true).rmse,
      explain: (_c, a) => {
        const off = smoothingRow(false);
        const on = smoothingRow(true);
        return `${fmt(Number(a), 3)}: ${sci(off.rmse)} without smoothing, ${sci(on.rmse)} with it. K's largest INT8 step became ${fmt(off.kStep / on.kStep, 3)}× finer and its RMS error ${fmt(off.kRms / on.kRms, 3)}× smaller, yet O's error falls by less: the rest of it comes from what smoothing K leaves alone, Q's INT8 rounding and the 16-bit P·V. The scores' shift by q·mean(K) cancels in the softmax, so smoothing costs nothing in exactness.`;
      },
      hint: 'Divide the "RMSE of O" of the smoothK off row by that of the on row.',
    },
  ],
  sources: [
    '"FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision", arXiv 2407.08608, §3.3 (FP8: block quantization, incoherent processing) and §4.3 (the numerical-error experiment on outlier inputs).',
    '"SageAttention: Accurate 8-Bit Attention for Plug-and-play Inference Acceleration", arXiv 2410.02367, §4.2 (smoothing K: the mean key subtracted before quantizing) and §4.3 (INT8 Q·Kᵀ with per-block scales); "SageAttention2: Efficient Attention with Thorough Outlier Smoothing and Per-thread INT4 Quantization", arXiv 2411.10958, §3.3 (P̃ and V in FP8 e4m3 for P̃·V: P̃ with the static scale 1/448, V per channel) and §3.4 (an FP32 buffer over the FP8 MMA’s 22-bit accumulator).',
  ],
};
