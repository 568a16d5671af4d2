// Chapter 8: FA4 on Blackwell — TMEM, warp roles, Large-Small-Large, 3/4 P hand-off, lazy rescaling, exp2 emulation.
import type { Chapter, HwRow } from './types.ts';
import { firstIndex, fmt, lessonRequest } from './queries.ts';
import { describeFor, shapeOf, type LoadRequest, type ProblemShape, type TraceEvent } from '../../../engine/api.ts';

const B200 = 'b200';
/** The DeepSeek head shape on one 256-row CTA: the K/V ring is large, small, large. */
const preset = lessonRequest('fa4', { nq: 256, nk: 512, d: 192, dv: 128, dtype: 'bf16', causal: true }, { blockM: 128, blockN: 128 });

/** The K/V ring of the B200 model for a shape: its slots' sizes, and whether two CTAs share each tile. */
function kvRing(shape: Partial<ProblemShape>): { slots: number[]; twoCta: boolean } {
  const full: ProblemShape = { batch: 1, hq: 1, hk: 1, nq: 256, nk: 4096, d: 128, dv: 128, dtype: 'bf16', causal: false, ...shape };
  const sheet = describeFor('fa4', B200, full);
  return { slots: sheet.smem.buffers.filter((b) => b.name === 'sKV').map((b) => b.bytes), twoCta: sheet.cta_group === 2 };
}
const kvSlots = (shape: Partial<ProblemShape>) => kvRing(shape).slots;
const kvRingOf = (req: LoadRequest) => kvRing(shapeOf(req.problem));
/** Microseconds the tensor memory is busy in a hardware-model row. */
const tmemBusyUs = (r: HwRow) => r.timeUs * (r.utilization.tmem ?? 0);

/** The keys of the first K/V tile the softmax warps exponentiate. */
function firstKeys(events: readonly TraceEvent[]): string {
  const e = events.find((x) => x.kind === 'exp');
  return e ? `${e.tile.cols[0]}–${e.tile.cols[1] - 1}` : '—';
}

export const chapter8: Chapter = {
  number: 8,
  slug: 'fa4',
  title: 'FA4: TMEM, warp roles and cheaper softmax',
  summary: 'Blackwell moves the accumulators to tensor memory and attacks the exponential itself.',
  blocks: [
    {
      kind: 'p',
      text: 'Blackwell (B200, SM100) doubles tensor throughput again while the exponential unit barely grows. FA4 answers with a new storage layer and two numerical tricks.',
    },
    {
      kind: 'p',
      text: '**Tensor memory and warp roles.** tcgen05 matmuls write their results to TMEM, a 512-column on-chip memory next to the tensor cores, not to registers. One CTA handles two 128-row $Q$ tiles (one when the packed rows, $N_q$ times $H_q/H_k$ when grouped-query heads are packed, are at most 128); TMEM holds both $S$ tiles and both $O$ accumulators. The warps specialize: a load warp issues TMA copies, a single MMA warp issues every GEMM, two softmax warpgroups (one per $Q$ tile) turn $S$ into $P$, and a correction warpgroup rescales $O$ in TMEM and writes the result. The warp-role timeline under the debugger has one row per role.',
    },
    {
      kind: 'p',
      text: '**Stages and Large-Small-Large.** Shared memory holds $Q_0$, $Q_1$, the staging buffers for $O$ and a K/V ring with as many stages as fit: $\\min((224\\,\\text{KiB} - sQ - sO) / \\text{stage bytes}, 32)$, which is {{stages-d128}} at $d = 128$ and {{stages-d64}} at $d = 64$. The debugger runs the DeepSeek shape, $d = 192$ and $d_v = 128$: a $K$ tile is larger than a $V$ tile, so the ring is laid out large, small, large, and as $K$ and $V$ alternate through it the pattern flips to small, large, small. The memory map shows the three slots filling in that order.',
    },
    {
      kind: 'p',
      text: '**2-CTA mode.** For non-causal problems with $d \\in \\{128, 192\\}$, $d_v = 128$ and more than 256 packed query rows (no split, no varlen queries), the shipped kernel pairs two CTAs on two SMs: the leader issues tcgen05.mma with cta_group::2 over 256 rows, each CTA keeps its own 128 rows of $S$ and $O$ in its own TMEM, and each holds only half of every $K$ and $V$ tile. Shared memory per K/V stage halves, so the ring deepens ({{stages-2cta}} stages at $d = 128$). The causal problem in the debugger runs one CTA, so the whole rotation is in one memory map; Try this below loads 512 rows without the mask and shows the halved slots.',
    },
    {
      kind: 'p',
      text: '**The 3/4 hand-off.** $P$ is written back into the $S$ columns of TMEM. The MMA warp does not wait for all of it: once the softmax warps have stored the first three quarters of $P$, the $P\\cdot V$ GEMM starts on them, and the last quarter arrives while it runs.',
    },
    {
      kind: 'p',
      text: "**Lazy rescaling.** FA4 works in base 2, with $s' = s\\cdot\\log_2 e$ and $P = 2^{s' - m}$. When a new block raises the row max by less than a threshold (8 in log2 units), FA4 keeps the stale max: $P$ may then reach $2^8 = 256$, which 16-bit storage and fp32 accumulators hold without trouble, and since $\\ell$ is summed against the same stale max the final $O/\\ell$ is still exact. Rescaling $O$ — a trip of the whole accumulator through the correction warps — becomes rare.",
    },
    {
      kind: 'math',
      tex: "m^{\\text{new}} = \\begin{cases} \\max_j S'_j & \\text{if } \\max_j S'_j > m + 8 \\\\ m & \\text{otherwise} \\end{cases}\\qquad O = \\tilde O / \\ell",
    },
    {
      kind: 'p',
      text: '**exp2 emulation.** Some of the exponentials are computed with a cubic polynomial on the FMA units (split $x$ into integer and fraction, approximate $2^{\\text{frac}}$, add the integer to the exponent bits), so the exponential unit and the FMA units share the work. Which ones is fixed per configuration: in 32-column fragments, from a start fragment to the one before the last, the last few of every period of columns, on masked blocks as well. The common $d = 128$ configuration emulates the last 4 of every 16 columns; the causal shape below a sparser pattern, and the same shape without the mask none at all. In the run of the debugger {{emulated}} of the {{exps}} exponentials go through the polynomial.',
    },
    {
      kind: 'p',
      text: "**Head dimension 256.** Two $S$ buffers and two 256-column $O$ accumulators would need 768 of TMEM's 512 columns, so $d = d_v = 256$ goes to a separate kernel, always 2-CTA, with one $Q$ tile per CTA, $P$ written over $S$ and a 4-stage ring of 64-row halves; its timeline draws both CTAs of a pair, leader above peer.",
    },
    {
      kind: 'p',
      text: "The debugger runs FA4's numbers in the MMA warp's issue order on $N_q = 256$, $N_k = 512$, $d = 192$, $d_v = 128$, causal, bf16, and opens at the first $P = 2^{S' - m}$ step with a key the mask leaves open. The CTA's two $Q$ tiles walk the same K/V tiles, last first, so the first tile (keys {{first-keys}}) is masked for every row of $Q_0$: warpgroup 0's first $P$ is all zeros, and the opening step is warpgroup 1's, on the diagonal. Toggle lazy rescaling and exp2 emulation: the trace and its counters change. The table runs the B200 model with each switch; read its unit columns as well as the time, because while the tensor cores are the limit, work taken off the correction or exponential units shows up there first.",
    },
  ],
  panes: [
    {
      preset,
      target: {
        describe: 'the first P = 2^(S′ − m) step with a key the mask leaves open',
        find: (ev) => firstIndex(ev, (e) => e.kind === 'exp' && e.p.some((v) => v > 0)),
      },
      views: ['heatmaps', 'counters', 'hw-memory', 'hw-timeline'],
    },
  ],
  toggles: [
    {
      feature: 'lazyRescale',
      label: 'Lazy rescaling',
      on: true,
      off: false,
      kernelDefault: true,
      explain: 'Off: O is rescaled whenever any row max grows.',
    },
    {
      feature: 'exp2Emulation',
      label: 'exp2 emulation',
      on: true,
      off: false,
      kernelDefault: true,
      explain: 'Off: every exponential goes to the special-function unit.',
    },
  ],
  hardware: {
    caption: 'Simulated B200 kernel time, hardware model (engine/hw)',
    shapeNote: 'batch 4, 16 heads, N = 4096, d = 128, bf16',
    shape: { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 128, dv: 128, dtype: 'bf16', causal: false },
    rows: [
      { algorithm: 'fa4', gpu: B200, features: {}, label: 'FA4, all on' },
      { algorithm: 'fa4', gpu: B200, features: { lazyRescale: false }, label: 'lazy rescaling off' },
      { algorithm: 'fa4', gpu: B200, features: { exp2Emulation: false }, label: 'exp2 emulation off' },
    ],
  },
  reference: ['fa4'],
  facts: (run) => ({
    'stages-d128': String(kvSlots({ d: 128, dv: 128 }).length),
    'stages-d64': String(kvSlots({ d: 64, dv: 64 }).length),
    'stages-2cta': String(kvSlots({ d: 128, dv: 128, nq: 4096 }).length),
    emulated: String(run(preset).result.stats?.emulatedExp2 ?? 0),
    exps: String(run(preset).result.counters.expCount),
    'first-keys': firstKeys(run(preset).events),
  }),
  sources: [
    '"FlashAttention-4: Algorithm and Kernel Pipelining Co-Design for Asymmetric Hardware Scaling", arXiv 2603.05451, abstract: techniques (1) the pipelines around fully asynchronous MMA and larger tiles, (2) the software-emulated exponential and conditional softmax rescaling, (3) tensor memory and the 2-CTA MMA mode (named there for the backward pass).',
    'The forward kernel: Dao-AILab/flash-attention, flash_attn/cute/flash_fwd_sm100.py@0251105a, l. 180–186 (P handed to the MMA warp after three quarters of its columns), l. 100–110 (_TUNING_CONFIG), l. 392–405 (the K/V stage count, 3 stages at d 192 / d_v 128).',
    'When q_stage = 1 and 2-CTA mode apply, and the d = 256 dispatch: flash_attn/cute/interface.py@0251105a, l. 343–346 and l. 822–840; the d = 256 kernel and its 4-stage K/V ring: flash_attn/cute/sm100_hd256_2cta_fmha_forward.py@0251105a, l. 35 and l. 162.',
  ],
  tryThis: [
    {
      label: 'Large logits',
      look: 'Scores spread wider: some max jumps now exceed the threshold and lazy rescaling has to rescale after all.',
      change: (r) => ({ ...r, distribution: 'large-logits' }),
    },
    {
      label: 'No causal mask',
      look: 'The same shape without the mask: this configuration has no exp2 emulation, so every exponential goes to the exponential unit.',
      change: (r) => ({ ...r, problem: { ...r.problem, causal: false } }),
    },
    {
      label: '512 query rows, no mask (2-CTA)',
      look: 'More than 256 rows, non-causal: CTAs pair up, each K/V slot of the memory map holds half a tile, and the ring deepens.',
      change: (r) => ({ ...r, problem: { ...r.problem, nq: 512, causal: false } }),
    },
  ],
  questions: [
    {
      id: 'rescaled-rows',
      prompt:
        'Step to the end of the loaded run. How many row rescales of $O$ does the Counters view count? Then switch lazy rescaling off and answer again.',
      kind: 'integer',
      answer: ({ run }) => run.result.counters.rescaleCount,
      explain: ({ run }, a) => {
        const steps = run.events.filter((e) => e.kind === 'rescale');
        const fromNothing = steps.filter((e) => e.mOld.every((m) => m === -Infinity)).length;
        const head =
          steps.length === 0
            ? `${a}: no rescale step ran.`
            : `${a}: the correction warps rescale 32 rows (one warp) at a time, every warp with a row whose max moved, over ${steps.length} rescale step${steps.length === 1 ? '' : 's'}.`;
        const empty =
          fromNothing > 0
            ? ` ${fromNothing === 1 ? 'One comes' : `${fromNothing} come`} after a first K/V block that hid every key of its rows: their max goes from −∞ to a real value, a jump larger than any threshold, and the factor 2^(−∞) = 0 multiplies an O that holds nothing yet.`
            : '';
        return run.request.features?.lazyRescale === false
          ? `${head} With lazy rescaling off, any growth of a row max sends its warp's rows through a rescale.${empty}`
          : `${head} With lazy rescaling on, a max that grows by 8 or less (log2 units) is left stale and nothing is rescaled.${empty}`;
      },
      hint: 'The Counters view lists row rescales; step to the end (End key). Each rescale step in the trace is a line "Rescale O of …".',
    },
    {
      id: 'small-slot',
      prompt: 'In the memory map, how many KiB does one of the smaller K/V slots of the ring hold?',
      kind: 'number',
      tolerance: 1e-3,
      answer: ({ run }) => Math.min(...kvRingOf(run.request).slots) / 1024,
      explain: ({ run }, a) => {
        const p = run.request.problem;
        const { slots, twoCta } = kvRingOf(run.request);
        const kib = (b: number) => fmt(b / 1024, 4);
        if (slots.every((b) => b === slots[0]))
          return `${fmt(Number(a), 4)} KiB: every slot of this ring is the same size (${slots.length} × ${kib(slots[0])} KiB), sized for the larger of a K and a V tile${twoCta ? ', halved in 2-CTA mode, where each CTA holds half of every tile' : ''}. The large, small, large layout is used only by one CTA at d = 192, d_v = 128, where two even stages would fit and three uneven ones do.`;
        return `${fmt(Number(a), 4)} KiB: the slots are ${slots.map(kib).join(', ')} KiB. A V tile holds ${p.dv} columns against K's ${p.d}, so the middle slot, sized for V, is smaller; as K and V alternate through the ring, the pattern flips to small, large, small.`;
      },
      hint: 'Hover the K/V slots (sKV) in the memory map: each shows its bytes.',
    },
    {
      id: 'rescale-tmem-us',
      prompt:
        'In the hardware table, switching lazy rescaling off leaves the B200 time where it was. How many microseconds longer is the tensor memory (tmem) busy per kernel with it off?',
      kind: 'number',
      // The table shows whole percents of the kernel time.
      tolerance: 0.03,
      answer: ({ simulate }) => tmemBusyUs(simulate('fa4', B200, { lazyRescale: false })) - tmemBusyUs(simulate('fa4', B200, {})),
      explain: ({ simulate }, a) => {
        const on = simulate('fa4', B200, {});
        const off = simulate('fa4', B200, { lazyRescale: false });
        const pct = (v: number | undefined) => `${Math.round((v ?? 0) * 100)}%`;
        const time =
          Math.abs(off.timeUs - on.timeUs) < 0.05
            ? `the kernel time stays ${fmt(on.timeUs, 4)} µs because the tensor cores, busy ${pct(on.utilization.tensor)} of it, set the pace, and the extra trips fit beside them`
            : `the kernel time moves from ${fmt(on.timeUs, 4)} to ${fmt(off.timeUs, 4)} µs`;
        return `${fmt(Number(a), 4)} µs (tmem ${pct(off.utilization.tmem)} of ${fmt(off.timeUs, 4)} µs against ${pct(on.utilization.tmem)} of ${fmt(on.timeUs, 4)} µs): every rescale is a trip of O through the correction warps and TMEM. Here ${time}.`;
      },
      hint: 'Busy time of a unit = kernel time × its share / 100. Work it out for tmem in the "FA4, all on" and "lazy rescaling off" rows and subtract.',
    },
  ],
};
