// Chapter 12: FP8 attention — what e4m3 and e5m2 hold, what an outlier does to a quantized
// tensor, and why FA3 rotates Q and K by a Hadamard transform. Every figure in the text is
// computed by the engine when shown.
import type { Chapter } from './types.ts';
import { fmt, lessonRequest } from './queries.ts';
import { roundFp8, encodeFp8, randomInputs, type LoadRequest, type TraceEvent } from '../../../engine/api.ts';
import {
  errorRow,
  fp8ErrorTable,
  kBlockScales,
  outlierKLoad,
  outlierQk,
  rotationEffect,
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

const formatOf = (req: LoadRequest) => (req.problem.dtype === 'fp8e5m2' ? 'e5m2' : 'e4m3');

/** K scale of the tile the first pane's target step works on. */
function targetKScale(run: { events: readonly TraceEvent[] }): number {
  const x = run.events[outlierQk(run.events)];
  return x?.kind === 'qk' && x.kScale !== undefined ? x.kScale : NaN;
}

/** The FA3 changes leave the SageAttention pane as it is: sage has no such switches and takes no FP8 dtype. */
const fa3Only = (change: (r: LoadRequest) => LoadRequest) => (r: LoadRequest) => (r.algorithm === 'fa3' ? change(r) : r);

export const chapter12: Chapter = {
  number: 12,
  slug: 'low-precision',
  title: 'FP8 attention: formats, scales and outliers',
  summary: 'What e4m3 and e5m2 can hold, why an outlier hurts a quantized tensor, and why FA3 rotates Q and K by a Hadamard transform.',
  blocks: [
    {
      kind: 'p',
      text: "Hopper's tensor cores multiply 8-bit floats at twice the rate of 16-bit ones, and FA3 uses that for the forward pass: $Q$, $K$ and $V$ are stored in FP8, $S = QK^{\\top}$ and $O = PV$ run as FP8 matmuls that accumulate in fp32, and $P$ is cast to FP8 between the two. Eight bits leave very little room, so this chapter looks at where precision goes.",
    },
    { kind: 'h', text: 'What eight bits can hold' },
    {
      kind: 'p',
      text: "Two layouts share the eight bits. **e4m3** has 4 exponent bits (bias 7) and 3 mantissa bits: 8 values per power of two, so a rounded value is off by at most 1/16 of itself. It has no infinities, which buys range: its largest value is $1.75 \\cdot 2^8 = 448$, and subnormals reach down to $2^{-9}$. **e5m2** has 5 exponent bits and 2 mantissa bits: a coarser grid over a far wider range, up to 57344. The kernels' conversions saturate: a value past the largest one becomes ±max, not inf.",
    },
    { kind: 'widget', widget: 'fp8-formats' },
    {
      kind: 'p',
      text: "A tensor is therefore stored with a **scale**: the kernel keeps codes $\\hat x = \\mathrm{fp8}(x / s)$ and multiplies $s$ back in after the matmul, $S = s_Q s_K\\, \\hat Q \\hat K^{\\top}$, with $s = \\max|x| / 448$ so that the largest entry lands on 448. With **block quantization** (the FA3 paper's experiment) each tile of $Q$, $K$ and $V$ gets its own scale; the shipped FA3 kernel keeps one descale per batch and KV head. The pane's **Precision view** lists a tile's $Q$, $K$ and $V$ scales when you hover, tap or focus it in its tile grid, and the line above its error heatmaps gives the current tile's scales and its largest S and P errors against float64.",
    },
    { kind: 'h', text: 'What an outlier does' },
    {
      kind: 'p',
      text: "Activations of trained models have a few entries tens of times larger than the rest. The FA3 paper measures its FP8 error on such a mix: every entry $\\mathcal{N}(0,1)$, plus $\\mathcal{N}(0,100)$ with probability 0.001. The pane below runs FA3's FP8 forward on those inputs, block scales on, rotation off, and opens at the S step whose $K$ block has the largest scale; the $|S - S_{64}|$ heatmap shows where the scores went wrong:",
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
      text: 'FP8 is a floating-point format, so entries of typical size keep their 3 mantissa bits even when an outlier sets the scale; an integer format would squeeze them onto a few of its evenly spaced steps (chapter 13). What the outlier brings is a handful of **large absolute errors**: an entry of 20 that does not land on 448 exactly rounds with an error of up to 20/16, and that error enters every score of its row of $Q$ or column of $K$ — scores which, being large, dominate their rows of the softmax.',
    },
    { kind: 'h', text: 'Incoherent processing: rotate, then quantize' },
    { kind: 'math', tex: 'M = D\\,H_d,\\qquad (QM)(KM)^{\\top} = Q\\,M M^{\\top} K^{\\top} = QK^{\\top}' },
    {
      kind: 'p',
      text: "The FA3 paper multiplies $Q$ and $K$ along the head dimension by the same random orthogonal matrix $M$: $H_d$, the normalized Walsh–Hadamard matrix, times $D$, a diagonal of random signs (here a switch, off by default; the shipped kernel does not rotate). The scores do not change, but an outlier $x$ in one channel becomes $d$ entries of size about $x/\\sqrt d$. $V$ is not rotated: it meets $P$, not $K$. On the error experiment's $Q$ and $K$ ($N = 256$, $d = 128$, per-tensor e4m3, float64 reference), the engine measures:",
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
      text: "Softmax exponentiates score errors, so the largest ones weigh most in the output. $O$ against float64 for the same problem (tiles $128 \\times 128$, $P$ scaled by 256 before its cast), one row per setting of fa3's switches:",
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
      text: 'The FA3 paper reports an RMSE of 2.4e-2 for per-tensor FP8 and 9.1e-3 for block quantization with incoherent processing (2.6× lower), on much longer sequences. Compare that with the ratio in the table above: how much the rotation buys depends on the inputs — row length, how rare and how large the outliers are — not on the format alone.',
    },
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
  ],
  toggles: [
    {
      feature: 'incoherent',
      label: 'Incoherent processing',
      on: true,
      off: false,
      kernelDefault: false,
      explain: "Q and K rotated by the same random Hadamard transform before quantizing (the FA3 paper's experiment)",
    },
    {
      feature: 'blockQuant',
      label: 'Block quantization',
      on: true,
      off: false,
      kernelDefault: false,
      explain: "one scale per tile of Q, K and V (the FA3 paper's experiment); off: one per batch and KV head, as the shipped kernel",
    },
  ],
  reference: ['fa3'],
  tryThis: [
    {
      label: 'e5m2 instead of e4m3',
      look: 'Q, K and V keep 2 mantissa bits and their scales divide by 57344 instead of 448; $P$ is still cast to e4m3.',
      change: fa3Only((r) => ({ ...r, problem: { ...r.problem, dtype: 'fp8e5m2' } })),
    },
    {
      label: 'Another seed',
      look: 'Other inputs from the same outlier mix: the outliers land in other blocks, and the block with the largest scale moves with them.',
      change: (r) => ({ ...r, seed: r.seed + 1 }),
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
      id: 'one-stored',
      prompt:
        "The debugger stands at $S = QK^{\\top}$ for the $K$ block with the largest scale $s$. Which FP8 value $\\hat x$ does the kernel store for an entry $x = 1$ of that block? The Precision view gives the tile's K scale.",
      kind: 'number',
      tolerance: 1e-9,
      answer: ({ run }) => {
        const s = targetKScale(run);
        return roundFp8(formatOf(run.request), 1 / s);
      },
      explain: ({ run }, a) => {
        const s = targetKScale(run);
        const back = Number(a) * s;
        return `${fmt(Number(a), 4)}: x / s = 1 / ${fmt(s, 4)} = ${fmt(1 / s, 4)}, and the nearest ${formatOf(run.request)} value is ${fmt(Number(a), 4)}. Multiplied back, it stands for ${fmt(back, 4)}, ${fmt(100 * Math.abs(back - 1), 2)}% off. Every other entry of the block is rounded on the same grid, relative to the one entry that sets s.`;
      },
      hint: 'Divide 1 by the K scale, then round to the grid of the format: in e4m3 there are 8 values per power of two.',
    },
    {
      id: 'rotation-gain',
      prompt:
        'In the output-error table, by what factor does incoherent processing lower the RMSE of $O$ when block scales are on? Three significant digits are enough.',
      kind: 'number',
      // The table prints three digits of each RMSE.
      tolerance: 0.015,
      answer: () => errorRow('block').rmse / errorRow('fa3').rmse,
      explain: () => {
        const gain = errorRow('block').rmse / errorRow('fa3').rmse;
        return `${fmt(gain, 3)}×: ${sci(errorRow('block').rmse)} without the rotation, ${sci(errorRow('fa3').rmse)} with it. Block scales alone leave each outlier's large rounding error in place; the rotation spreads the outlier over the head dimension before rounding. The paper's 2.6× comes from longer rows and other outliers: the gain depends on the inputs, not on the format alone.`;
      },
      hint: 'Divide the RMSE of the row "block scales only" by that of "block scales + incoherent".',
    },
  ],
  sources: [
    '"FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision", arXiv 2407.08608, §3.3 (FP8: block quantization, incoherent processing) and §4.3 (the numerical-error experiment on outlier inputs).',
    'FA3 FP8 descales per batch and KV head: Dao-AILab/flash-attention, hopper/flash_api.cpp@0251105a, l. 694–696 (q/k/v_descale of shape (b, h_k)), and hopper/flash_fwd_kernel_sm90.h@0251105a, l. 412–414 (the Q and K descales read per batch and KV head and folded into the softmax scale).',
  ],
};
