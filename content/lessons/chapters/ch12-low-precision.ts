// Chapter 12: low precision — what e4m3 and e5m2 hold, what an outlier does to a quantized
// tensor, why FA3 rotates Q and K by a Hadamard transform, and where P loses its small values
// in the cast before P·V. Every figure in the text is computed by the engine when shown.
import type { Chapter } from './types.ts';
import { fmt, lessonRequest } from './queries.ts';
import { FP8, roundFp8, encodeFp8, randomInputs, type LoadRequest, type TraceEvent } from '../../../engine/api.ts';
import { firstQk, K_OFFSET, SAGE_PRESET, SMOOTH_PROBLEM, smoothingRow, smoothingTable } from './k-smoothing.ts';
import {
  errorRow,
  firstFlush,
  flushTable,
  fp8ErrorTable,
  kBlockScales,
  nonSinkFlushes,
  outlierKLoad,
  outlierQk,
  rotationEffect,
  SINK_PRESET,
  ERROR_PROBLEM,
  ERROR_SEED,
} from './low-precision.ts';

/** First pane: FA3's FP8 forward on the FA3 paper's outlier mix, block scales on, no rotation yet. */
export const OUTLIER_PRESET: LoadRequest = lessonRequest(
  'fa3',
  { nq: 64, nk: 64, d: 32, dtype: 'fp8e4m3' },
  { blockM: 16, blockN: 16 },
  { seed: 1, distribution: 'fa3-outliers', features: { blockQuant: true, incoherent: false } },
);

const sci = (x: number) => x.toExponential(2);

/** K's largest entry of a request's inputs (before any rotation): value, key and channel. */
function kOutlier(req: LoadRequest): { value: number; key: number; channel: number } {
  const x = randomInputs(req.problem, { seed: req.seed, distribution: req.distribution });
  let best = { value: 0, key: -1, channel: -1 };
  x.k.forEach((v, i) => {
    if (Math.abs(v) > Math.abs(best.value)) best = { value: v, key: Math.floor(i / req.problem.d), channel: i % req.problem.d };
  });
  return best;
}

/** The FA3 changes leave the SageAttention pane as it is: sage has no such switches and takes no FP8 dtype. */
const fa3Only = (change: (r: LoadRequest) => LoadRequest) => (r: LoadRequest) => (r.algorithm === 'fa3' ? change(r) : r);

const pExpOf = (ev: readonly TraceEvent[], i: number) => {
  const x = ev[i];
  return x?.kind === 'exp' ? x : undefined;
};

export const chapter12: Chapter = {
  number: 12,
  slug: 'low-precision',
  title: 'Low precision: FP8 attention',
  summary:
    'What e4m3 and e5m2 can hold, why an outlier hurts a quantized tensor, FA3’s Hadamard rotation, and the P values the e4m3 cast flushes to zero.',
  blocks: [
    {
      kind: 'p',
      text: "Hopper's tensor cores multiply 8-bit floats at twice the rate of 16-bit ones, and FA3 uses that for the forward pass: $Q$, $K$ and $V$ are stored in FP8, $S = QK^{\\top}$ and $O = PV$ run as FP8 matmuls that accumulate in fp32, and $P$ is cast to FP8 between the two. Eight bits leave very little room, so this chapter looks at where precision goes.",
    },
    { kind: 'h', text: 'What eight bits can hold' },
    {
      kind: 'p',
      text: "Two layouts share the eight bits. **e4m3** has a sign, 4 exponent bits (bias 7) and 3 mantissa bits: 8 values per power of two, so neighbours are 12.5% apart at the bottom of a binade and a rounded value is off by at most 1/16 of itself. It gives up infinities to gain range: only S.1111.111 is NaN, so the largest value is S.1111.110 = $1.75 \\cdot 2^8 = 448$. Below the smallest normal value $2^{-6}$ come subnormals (exponent field 0, no implicit leading 1) down to $2^{-9}$; anything at or below half of that, $2^{-10}$, rounds to zero. **e5m2** keeps IEEE's rules with 5 exponent bits (bias 15) and 2 mantissa bits: a coarser grid (25% steps) over a far wider range, up to 57344 and down to $2^{-16}$. The FP8 conversions the kernels use saturate: a value past the largest one becomes ±max instead of inf or NaN.",
    },
    { kind: 'widget', widget: 'fp8-formats' },
    {
      kind: 'p',
      text: "A tensor is therefore stored with a **scale**: the kernel keeps codes $\\hat x = \\mathrm{fp8}(x / s)$ and multiplies $s$ back in after the matmul, $S = s_Q s_K\\, \\hat Q \\hat K^{\\top}$. FlashScope uses $s = \\max|x| / 448$, so the tile's largest entry lands exactly on 448. With **block quantization** each $B_r \\times d$ tile of $Q$ and each $B_c \\times d$ tile of $K$ and $V$ gets its own scale; without it one scale serves the whole tensor. The shipped FA3 kernel does the latter: one descale per batch and KV head for each of $Q$, $K$ and $V$ (the query heads of a GQA group share $Q$'s), folded into the softmax scale for $S$ and applied to $O$ at the end (hopper/flash_api.cpp and flash_fwd_kernel_sm90.h at Dao-AILab/flash-attention 0251105a); block scales are the FA3 paper's experiment. Each pane below has a **Precision** view: hover or focus a tile in its tile grid (or in its error heatmaps) and it lists that tile's $Q$, $K$ and $V$ scales; the line above the error heatmaps gives the scales of the tile the current step works on, next to its largest S and P errors against float64.",
    },
    { kind: 'h', text: 'What an outlier does' },
    {
      kind: 'p',
      text: "Activations of trained models have a few entries tens of times larger than the rest. The FA3 paper measures its FP8 error on such a mix: every entry $\\mathcal{N}(0,1)$, plus $\\mathcal{N}(0,100)$ with probability 0.001. The first pane below runs FA3's FP8 forward on those inputs, block scales on, rotation off, and opens at the S step whose $K$ block has the largest scale; its Precision view shows that K scale for the current tile, and the $|S - S_{64}|$ heatmap shows where the scores went wrong:",
    },
    {
      kind: 'live',
      label: 'K block scales of the first pane',
      compute: (run) => {
        const off = run(OUTLIER_PRESET);
        const on = run({ ...OUTLIER_PRESET, features: { ...OUTLIER_PRESET.features, incoherent: true } });
        const o = kOutlier(OUTLIER_PRESET);
        const bn = OUTLIER_PRESET.blocks.blockN!;
        const sOff = kBlockScales(off.events);
        const sOn = kBlockScales(on.events);
        const blocks = [...sOff.keys()].sort((a, b) => a - b);
        const ob = Math.floor(o.key / bn);
        const others = blocks.filter((b) => b !== ob).map((b) => sOff.get(b)!);
        return {
          text: `$K$'s largest entry sits at key ${o.key}, channel ${o.channel}, in K block ${ob}, and is ${fmt(Math.abs(o.value), 2)} times as large as a typical entry (about 1). That one entry sets its block's scale, $\\max|K_{\\text{block}}| / 448$, so an entry of size 1 there is stored as the code nearest ${fmt(1 / sOff.get(ob)!, 3)}; in the other blocks, whose largest entries are ordinary, the same entry becomes a code near ${others.map((v) => fmt(1 / v, 3)).join(', ')}. With incoherent processing (next section) the scales change as follows:`,
          table: {
            head: ['K block', 'scale, rotation off', 'scale, rotation on'],
            rows: blocks.map((b) => [String(b), sci(sOff.get(b)!), sci(sOn.get(b)!)]),
          },
        };
      },
    },
    { kind: 'goto', pane: 0, label: 'the load of the K block with the largest scale', find: outlierKLoad },
    { kind: 'goto', pane: 0, label: 'S = QKᵀ for that block, with its Q and K scales', find: outlierQk },
    {
      kind: 'p',
      text: "For an integer format that would already be the whole story: INT8's 255 steps are evenly spaced, so with an outlier ten times the typical entry, entries of typical size land on the lowest 13 or so of the 127 steps on each side (SageAttention, which quantizes $Q$ and $K$ to INT8, keeps per-block scales and subtracts $K$'s mean over tokens for this reason). FP8 is a floating-point format: every entry keeps its 3 mantissa bits wherever it lands in the normal range, and e4m3's normal range spans almost 15 powers of two, so moving the typical entries down by a few of them costs little on average. What the outlier brings is a handful of **large absolute errors**: an entry of 20 that does not land on 448 exactly rounds with an error of up to 20/16, and that error enters every score of its row of $Q$ or column of $K$ — scores which, because the outlier makes them large, also dominate their rows of the softmax.",
    },
    { kind: 'h', text: 'Incoherent processing: rotate, then quantize' },
    { kind: 'math', tex: 'M = D\\,H_d,\\qquad (QM)(KM)^{\\top} = Q\\,M M^{\\top} K^{\\top} = QK^{\\top}' },
    {
      kind: 'p',
      text: "The FA3 paper (arXiv 2407.08608, §3.3) multiplies $Q$ and $K$ along the head dimension by the same random orthogonal matrix (the shipped kernel does not rotate; it takes tensors already in e4m3, so a caller would have to, and FlashScope keeps the rotation as a switch, off by default): $H_d$, the normalized Walsh–Hadamard matrix ($d$ a power of two; block-diagonal otherwise), times $D$, a diagonal of random signs. In exact arithmetic the scores do not change. What changes is the spread of each row: an outlier $x$ in one channel becomes $d$ entries of size about $x/\\sqrt d$, mixed with the rest. The rotation costs $O(d \\log d)$ per row (the fast transform) and can be fused into the rotary embedding. $V$ is not rotated: it meets $P$, not $K$, and rotating it would have to be undone on $O$. On the error experiment's $Q$ and $K$ ($N = 256$, $d = 128$, per-tensor e4m3, float64 reference), the engine measures:",
    },
    {
      kind: 'live',
      label: 'what the rotation changes',
      compute: () => {
        const r = rotationEffect();
        return {
          text: `The average rounding error of $K$ barely moves (it is relative, so it follows the entries, not the scale), while the largest entry — and with it the largest error of a score — falls. The mean score error stays about the same; the worst one drops ${fmt(r.sMax[0] / r.sMax[1], 3)}×.`,
          table: {
            head: ['', 'rotation off', 'rotation on'],
            rows: [
              ['largest |K| entry (sets the scale)', fmt(r.kMax[0], 4), fmt(r.kMax[1], 4)],
              ['RMS rounding error of K', sci(r.kQuantRms[0]), sci(r.kQuantRms[1])],
              ['RMS error of τ·QKᵀ', sci(r.sRms[0]), sci(r.sRms[1])],
              ['largest error of τ·QKᵀ', sci(r.sMax[0]), sci(r.sMax[1])],
            ],
          },
        };
      },
    },
    {
      kind: 'p',
      text: "Softmax exponentiates score errors, so the largest ones decide much of the output's error. Here is $O$ against float64 for the same problem (seed, $N$ and $d$ as above, tiles $128 \\times 128$, $P$ scaled by 256 before its cast), each configuration a switch of FlashScope's fa3:",
    },
    {
      kind: 'live',
      label: 'output error against float64',
      compute: () => {
        const rows = fp8ErrorTable();
        const base = errorRow('per-tensor').rmse;
        const fa3 = errorRow('fa3').rmse;
        return {
          text: `N = ${ERROR_PROBLEM.nq}, d = ${ERROR_PROBLEM.d}, seed ${ERROR_SEED}. Per-tensor FP8 over FA3's FP8: ${fmt(base / fa3, 3)}×; FP8 over FP16: ${fmt(fa3 / errorRow('fp16').rmse, 3)}×.`,
          table: { head: ['configuration', 'RMSE of O', 'max |error|'], rows: rows.map((r) => [r.label, sci(r.rmse), sci(r.maxAbs)]) },
        };
      },
    },
    {
      kind: 'p',
      text: "The FA3 paper reports an RMSE of 2.4e-2 for per-tensor FP8 and 9.1e-3 for block quantization with incoherent processing (2.6× lower), on much longer sequences than the table above. Compare that ratio with the one the engine measured here: how much the rotation buys depends on the inputs — the length of the rows, how rare and how large the outliers are — not on the format alone. In the paper, as here, removing the rotation brings the error back near the baseline's, while removing the block scales barely moves it.",
    },
    { kind: 'h', text: 'Where P loses precision' },
    {
      kind: 'p',
      text: "The second FP8 matmul is $O \\mathrel{+}= PV$, so $P$ must be cast to e4m3 first. In the online softmax $P_{ij} = e^{S_{ij} - m_i}$ with $m_i$ the row's running max, so every $P$ is at most 1 — and everything at or below $2^{-10}$, a score about 6.9 below the max, would flush to zero. FA3's kernel avoids much of that with a static factor: it subtracts $m_i - 8$ in base 2, which multiplies $P$ by $2^8 = 256$ before the cast (the row sum $\\ell$ uses the fp32 $P$, and the factor is divided out at the end). FlashScope's **pScale** switch is that factor.",
    },
    {
      kind: 'p',
      text: "Which $P$ values are small depends on the max they are measured against, and that depends on the order of the K/V blocks. With **attention sinks** — a few keys, usually the first tokens, that every query scores highly — a loop that starts with the sinks fixes $m_i$ at the sink logit from the first block on, and every later $P$ is measured against it. FA3 walks the K/V blocks from last to first, so the sinks come last, and the other keys' $P$ are first computed against their own, smaller max and rescaled later in fp32. A 2026 paper on P-cast precision reports this effect of block order and scale; the second pane is a sink pattern (4 sink keys, 16 queries, 64 keys, $d = 32$) with the sinks first and pScale 1. The counts below are the non-sink $P$ values that are positive in fp32 and zero after the cast:",
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
      text: 'The second pane\'s Precision view counts them as the run goes: its "Flushed by step" chart has one bar per cast, and the line under it gives the P values flushed so far in this head and in the whole run. The $|P - P_{64}|$ heatmap of the view and the P heatmap of the tile heatmaps ring every flushed value, from the step that flushed it on; the line above the error heatmaps gives the current tile\'s count.',
    },
    { kind: 'goto', pane: 1, label: 'the first exp step where the cast flushes P values', find: firstFlush },
    {
      kind: 'goto',
      pane: 1,
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
      text: "A flushed $P$ is a key whose value never reaches $O$ although $\\ell$ counts it: the row's output loses that key's contribution but is still divided by a sum that includes it; one such value is harmless, hundreds of them per row over a long context are not. Switch the K/V order or pScale in \"Try this\" and watch the second pane's Precision view: the ringed cells and the bars of the flush chart thin out as the table says.",
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
          text: `SageAttention version 1 (INT8 Q·Kᵀ, FP16 P·V), N = ${p.nq}, d = ${p.d}, fp16, K blocks of 64 keys; $Q$, $K$, $V$ drawn from N(0,1), then every channel of $K$ shifted by its own constant in ±${K_OFFSET}. Smoothing makes K's largest INT8 step ${fmt(off.kStep / on.kStep, 3)}× finer and the error of O ${fmt(off.rmse / on.rmse, 3)}× smaller.`,
          table: {
            head: ['K smoothing', 'largest δ_K', 'RMS error of K', 'RMSE of O', 'max |error| of O'],
            rows: rows.map((r) => [r.label, sci(r.kStep), sci(r.kRms), sci(r.rmse), sci(r.maxAbs)]),
          },
        };
      },
    },
    {
      kind: 'p',
      text: 'The third pane steps sage (version 1) on an ordinary fp16 problem, smoothing off. At its S step the Precision view\'s tile line gives the tile\'s Q and K scales, which are the INT8 steps $\\delta_Q$ and $\\delta_K$ (version 1 multiplies $Q$ by $\\tau \\log_2 e$ before quantizing, so $\\delta_Q$ carries that factor too), and the $|S - S_{64}|$ heatmap shows what the integer scores lost (sage\'s scores are in log2 units; the view compares them so). With smoothing on ("SageAttention with K smoothing" in "Try this") every score of row $i$ is smaller by $q_i \\cdot \\bar k\\,\\tau$, which the softmax ignores; the view shifts its float64 scores by the same amount (the trace names each row\'s shift), so $|S - S_{64}|$ still shows only what the integer scores lost. For what smoothing does to $O$, read the table above. On the FA3 outlier inputs smoothing barely helps: an outlier is one entry, not a channel offset, and per-block INT8 has no counterpart to the Hadamard rotation (BENCHMARKS.md, "SageAttention", measures both inputs at $N$ = 1024 and 4096).',
    },
    { kind: 'goto', pane: 2, label: "SageAttention's first S = QKᵀ, from INT8 codes", find: firstQk },
  ],
  panes: [
    {
      label: 'FP8 on outlier inputs',
      preset: OUTLIER_PRESET,
      target: {
        describe: 'S = QKᵀ for the K block with the largest scale (with the rotation off, the block holding K’s outlier)',
        find: outlierQk,
      },
      views: ['heatmaps', 'precision', 'formula', 'counters'],
    },
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
  toggles: [
    {
      feature: 'incoherent',
      label: 'Incoherent processing',
      on: true,
      off: false,
      kernelDefault: false,
      explain:
        "Q and K rotated by the same random Hadamard transform before quantizing (the FA3 paper's experiment; the shipped kernel does not rotate)",
    },
    {
      feature: 'blockQuant',
      label: 'Block quantization',
      on: true,
      off: false,
      kernelDefault: false,
      explain:
        "one scale per tile of Q, K and V (the FA3 paper's experiment; off, as the shipped kernel: one descale per batch and KV head)",
    },
  ],
  reference: ['fa3', 'sage'],
  tryThis: [
    {
      label: 'FA3’s K/V order (last to first)',
      look: 'In the sink pane the sinks now come last: far fewer $P$ values flush at the exp steps.',
      change: fa3Only((r) => ({ ...r, features: { ...r.features, reverseKv: true } })),
    },
    {
      label: 'P scaled by 256 before the cast',
      look: "FA3's static factor: $P \\cdot 256$ keeps values down to $2^{-18}$, so far fewer $P$ values flush (the table in the text gives the counts).",
      change: fa3Only((r) => ({ ...r, features: { ...r.features, pScale: 256 } })),
    },
    {
      label: 'e5m2 instead of e4m3',
      look: 'Q, K and V keep 2 mantissa bits and their scales divide by 57344 instead of 448; $P$ is still cast to e4m3.',
      change: fa3Only((r) => ({ ...r, problem: { ...r.problem, dtype: 'fp8e5m2' } })),
    },
    {
      label: 'SageAttention with K smoothing',
      look: "In the third pane's Precision view, $|S - S_{64}|$ stays at the size of the INT8 steps: every score of row $i$ moved by the same $q_i \\cdot \\bar k\\,\\tau$, and the view compares against float64 scores moved alike. Its δ_K (tile line) barely changes: these keys have no large offset to remove.",
      change: (r) => (r.algorithm === 'sage' ? { ...r, features: { ...r.features, smoothK: true } } : r),
    },
  ],
  questions: [
    {
      id: 'e4m3-300',
      prompt: 'What is the e4m3 value nearest to 300? (The widget above can tell you, but try the spacing first.)',
      kind: 'number',
      tolerance: 1e-9,
      answer: () => roundFp8('e4m3', 300),
      explain: (_c, a) => {
        const code = encodeFp8('e4m3', Number(a));
        return `${a} (code 0x${code.toString(16).padStart(2, '0')}): between 256 and 512 the 3 mantissa bits give steps of 256/8 = 32, so the neighbours of 300 are 288 and 320, and 288 is nearer.`;
      },
      hint: 'Between 2⁸ = 256 and 2⁹ there are 8 e4m3 values, evenly spaced.',
    },
    {
      id: 'block-max',
      prompt:
        "In the first pane the debugger stands at $S = QK^{\\top}$ for the $K$ block with the largest scale. What is the largest $|K|$ entry of that block as it was quantized (after any rotation), i.e. kScale times the format's largest value (448 for e4m3)? Three significant digits are enough.",
      kind: 'number',
      tolerance: 2e-3,
      answer: ({ run }) => {
        const i = outlierQk(run.events);
        const x = run.events[i];
        return x?.kind === 'qk' && x.kScale !== undefined
          ? x.kScale * FP8[run.request.problem.dtype === 'fp8e5m2' ? 'e5m2' : 'e4m3'].max
          : NaN;
      },
      explain: ({ run }, a) => {
        const x = run.events[outlierQk(run.events)];
        const ks = x.kind === 'qk' ? x.kScale! : NaN;
        return `${fmt(Number(a), 5)}: kScale ${sci(ks)} times the format's largest value. That entry is stored as exactly ±max; every other entry of the block is stored relative to it.`;
      },
      hint: "The first pane's Precision view gives the current tile's K scale, in the line above its error heatmaps (or hover the tile in its tile grid); multiply it by 448.",
    },
    {
      id: 'rmse-incoherent',
      prompt: 'In the output-error table (block scales on), which RMSE is larger: with incoherent processing off, or on?',
      kind: 'choice',
      choices: [
        { id: 'off', label: 'off: without the rotation' },
        { id: 'on', label: 'on: with the rotation' },
      ],
      answer: () => (errorRow('block').rmse > errorRow('fa3').rmse ? 'off' : 'on'),
      explain: () =>
        `Off: ${sci(errorRow('block').rmse)} against ${sci(errorRow('fa3').rmse)} with the rotation. Block scales alone leave each outlier's large rounding error in place; the rotation spreads it over the head dimension.`,
      hint: 'Compare the rows "block scales only" and "block scales + incoherent" of the table.',
    },
    {
      id: 'flushed-p1',
      prompt:
        'On the sink problem of the second pane (sinks first, pScale 1), how many non-sink $P$ values does the e4m3 cast flush to zero in the whole run?',
      kind: 'integer',
      answer: ({ runOther }) => nonSinkFlushes(runOther(SINK_PRESET).events).flushed,
      explain: ({ runOther }, a) => {
        const c = nonSinkFlushes(runOther(SINK_PRESET).events);
        const r256 = nonSinkFlushes(runOther({ ...SINK_PRESET, features: { ...SINK_PRESET.features, pScale: 256 } }).events);
        return `${a} of the ${c.positive} positive non-sink P values: each is at or below 2⁻¹⁰ of its row's max, which the sinks fixed from the first block on. With pScale 256 it is ${r256.flushed}.`;
      },
      hint: 'Step the second pane to its last step and read the whole run\'s count in its Precision view, under "Flushed by step" (a sink key is its row\'s max, so its P is 1 and never flushes); or read the first row of the flush table in the text.',
    },
    {
      id: 'flush-step-count',
      prompt: 'At the exp step the second pane opens at, how many $P$ values of the tile were flushed by the cast?',
      kind: 'integer',
      answer: ({ runOther }) => {
        const ev = runOther(SINK_PRESET).events;
        return pExpOf(ev, firstFlush(ev))?.flushed?.length ?? 0;
      },
      explain: ({ runOther }, a) => {
        const ev = runOther(SINK_PRESET).events;
        const x = pExpOf(ev, firstFlush(ev));
        if (!x) return 'No exp step of this problem flushes a P value.';
        return `${a}, in K block ${x.tile.kvBlock} (keys ${x.tile.cols[0]}…${x.tile.cols[1] - 1}), each measured against the sinks' logit: ${x.tile.kvBlock === 0 ? 'the sinks are keys 0–3 of this very block' : 'the sinks of block 0 set the max before this block'}.`;
      },
      hint: 'The second pane\'s Precision view gives it in the line above its error heatmaps ("flushed P" of this tile so far); the ringed cells of its P heatmaps are the same values.',
    },
    {
      id: 'smoothk-rmse',
      prompt:
        'In the K smoothing table (SageAttention, keys shifted per channel), which RMSE of $O$ against float64 is larger: with K smoothing off, or on?',
      kind: 'choice',
      choices: [
        { id: 'off', label: 'off: K quantized with its offsets' },
        { id: 'on', label: 'on: K − mean(K) quantized' },
      ],
      answer: () => (smoothingRow(false).rmse > smoothingRow(true).rmse ? 'off' : 'on'),
      explain: (_c, a) => {
        const off = smoothingRow(false);
        const on = smoothingRow(true);
        return `${a === 'off' ? 'Off' : 'On'}: ${sci(off.rmse)} without smoothing, ${sci(on.rmse)} with it. Without smoothing the offset channels set δ_K (${sci(off.kStep)} in the coarsest block); K − mean(K) needs a step of only ${sci(on.kStep)}, and the scores' shift by q·mean(K) cancels in the softmax.`;
      },
      hint: 'Subtracting the mean shifts every score of a row by the same amount; ask what that does to the softmax, and what it does to the largest |entry| of each K block.',
    },
  ],
  sources: [
    '"FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision", arXiv 2407.08608, §3.3 (FP8: block quantization, incoherent processing) and §4.3 (the numerical-error experiment on outlier inputs).',
    'FA3 FP8 descales per batch and KV head: Dao-AILab/flash-attention, hopper/flash_api.cpp@0251105a and hopper/flash_fwd_kernel_sm90.h@0251105a.',
    '"SageAttention: Accurate 8-Bit Attention for Plug-and-play Inference Acceleration", arXiv 2410.02367 (INT8 Q·Kᵀ with per-block scales, smoothing K); "SageAttention2: Efficient Attention with Thorough Outlier Smoothing and Per-thread INT4 Quantization", arXiv 2411.10958 (FP8 P·V).',
  ],
};
