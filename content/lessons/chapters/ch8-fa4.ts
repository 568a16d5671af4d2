// Chapter 8: FA4 on Blackwell — TMEM, warp roles, Large-Small-Large, 3/4 P hand-off, lazy rescaling, exp2 emulation.
import type { Chapter } from './types.ts';
import { firstIndex, fmt, lessonRequest } from './queries.ts';

const B200 = 'b200';

export const chapter8: Chapter = {
  number: 8,
  slug: 'fa4',
  title: 'FA4: TMEM, warp roles and cheaper softmax',
  summary: 'Blackwell moves the accumulators to tensor memory and attacks the exponential itself.',
  blocks: [
    {
      kind: 'p',
      text: 'Blackwell (B200, SM100) doubles tensor throughput again while the exponential unit barely grows. FA4 ("FlashAttention-4: Algorithm and Kernel Pipelining Co-Design for Asymmetric Hardware Scaling", arXiv 2603.05451; flash_attn/cute/flash_fwd_sm100.py at 0251105a) answers with a new storage layer and two numerical tricks.',
    },
    {
      kind: 'p',
      text: '**Tensor memory and warp roles.** tcgen05 matmuls write their results to TMEM, a 512-column on-chip memory next to the tensor cores, not to registers. One CTA handles two 128-row $Q$ tiles (one when the packed rows, $N_q$ times $H_q/H_k$ when grouped-query heads are packed, are at most 128: interface.py sets q_stage = 1); TMEM holds both $S$ tiles and both $O$ accumulators. The warps specialize: a load warp issues TMA copies, a single MMA warp issues every GEMM, two softmax warpgroups (one per $Q$ tile) turn $S$ into $P$, and a correction warpgroup rescales $O$ in TMEM and writes the result.',
    },
    {
      kind: 'p',
      text: '**Stages and Large-Small-Large.** Shared memory holds $Q_0$, $Q_1$, the staging buffers for $O$ and a K/V ring with as many stages as fit: $\\min((224\\,\\text{KiB} - sQ - sO) / \\text{stage bytes}, 32)$, which is 3 at $d = 128$ and 10 at $d = 64$. With $d = 192$ and $d_v = 128$ a $K$ tile is larger than a $V$ tile, so the three stages are laid out large, small, large, and as $K$ and $V$ alternate through the ring the pattern flips to small, large, small. That packing is what fits the DeepSeek shape into 227 KiB (there $O$ is staged over $Q$).',
    },
    {
      kind: 'p',
      text: '**2-CTA mode.** For non-causal problems with $d \\in \\{128, 192\\}$, $d_v = 128$ and more than 256 packed query rows (no split, no varlen queries), the shipped kernel pairs two CTAs on two SMs (use_2cta_instrs): the leader issues tcgen05.mma with cta_group::2 over 256 rows, each CTA keeps its own 128 rows of $S$ and $O$ in its own TMEM, and each holds only half of every $K$ and $V$ tile. Shared-memory traffic and footprint per K/V stage halve, so the ring deepens (6 stages at $d = 128$). The FA4 paper (arXiv 2603.05451) presents the 2-CTA MMA chiefly for the backward pass; in the code it is the forward default too, and the hardware views show it (cta_group in the resource sheet, halved sKV slots in the memory map).',
    },
    {
      kind: 'p',
      text: "**Head dim 256 and the pair on the timeline.** The main kernel's layout does not fit at $d = d_v = 256$ (two $S$ buffers and two 256-column $O$ would need 768 of TMEM's 512 columns), and interface.py sends every such problem to a separate kernel, sm100_hd256_2cta_fmha_forward.py (both at commit 0251105a of Dao-AILab/flash-attention), always in 2-CTA mode. Each CTA takes one 128-row Q tile, loaded as two 128-column halves; $S = QK^\\top$ is two MMAs (one per half of $d$) and $O \\mathrel{+}= PV$ two more (one per half of $d_v$), all of $M = 256$ over both CTAs. TMEM is full: $S_0$ and $S_1$ take columns 0-255, $O$ the other 256, and $P$ is written over $S$. A 4-stage ring carries $K$ and $V$ in 64-row halves per CTA; the leader issues $QK_{i}$ before $PV_{i-1}$, and correction rescales $O$ after every block with no threshold, then writes $O$ straight from registers. With 4 softmax and 4 correction warps per CTA the registers go to 256 and 160 per thread. The warp-role timeline draws both CTAs of a pair, leader above peer: the peer's MMA warp issues nothing, and the leader's MMA bars reach into its row because both SMs compute them; the peer's softmax waits for the leader's commit, and the leader's next $P\\cdot V$ waits for $P$ from both CTAs.",
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
      tex: "m^{\\text{new}} = \\begin{cases} \\max(m, \\mathrm{rowmax}(S')) & \\text{if } \\mathrm{rowmax}(S') - m > 8 \\\\ m & \\text{otherwise} \\end{cases}\\qquad O = \\tilde O / \\ell",
    },
    {
      kind: 'p',
      text: '**exp2 emulation.** Some of the exponentials are computed with a cubic polynomial on the FMA units (split $x$ into integer and fraction, approximate $2^{\\text{frac}}$, add the integer to the exponent bits), so the exponential unit and the FMA units share the work. Which ones is fixed per configuration: in 32-column fragments, from fragment 1 to the one before the last, the last 4 of every 16 columns — 16 of 128 — and on masked blocks as well; the 2-CTA $d = 128$ kernel uses every 10 instead (_TUNING_CONFIG in flash_fwd_sm100.py). An earlier FlashScope model emulated 24 of 128 from fragment 0 and skipped masked blocks; the code says otherwise.',
    },
    {
      kind: 'p',
      text: "The debugger runs FA4's numbers in the MMA warp's issue order on $N = 256$, $d = 16$, bf16, and opens at the first $P = 2^{S' - m}$ step. Toggle lazy rescaling and exp2 emulation: the trace and its counters change. The table runs the B200 model with each switch; read its unit columns as well as the time, because while the tensor cores are the limit, work taken off the correction or exponential units shows up there first.",
    },
  ],
  panes: [
    {
      preset: lessonRequest('fa4', { nq: 256, nk: 256, d: 16, dtype: 'bf16' }, { blockM: 128, blockN: 128 }),
      target: { describe: 'the first P = 2^(S′ − m) step of softmax warpgroup 0', find: (ev) => firstIndex(ev, (e) => e.kind === 'exp') },
      views: ['heatmaps', 'stats', 'counters'],
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
  tryThis: [
    {
      label: 'Large logits',
      look: 'Scores spread wider: some max jumps now exceed the threshold and lazy rescaling has to rescale after all.',
      change: (r) => ({ ...r, distribution: 'large-logits' }),
    },
    {
      label: 'Causal',
      look: 'The diagonal blocks are masked, and masked blocks skip the polynomial exp2.',
      change: (r) => ({ ...r, problem: { ...r.problem, causal: true } }),
    },
  ],
  questions: [
    {
      id: 'rescaled-rows',
      prompt: 'How many row rescales of $O$ did the correction warpgroup perform in the loaded run?',
      kind: 'integer',
      answer: ({ run }) => run.result.counters.rescaleCount,
      explain: ({ run }, a) =>
        run.request.features?.lazyRescale === false
          ? `${a}: with lazy rescaling off, every block whose max grew sends the affected rows' accumulators through a rescale.`
          : `${a}: with lazy rescaling on, only max jumps larger than 8 (log2 units) force a rescale.`,
      hint: 'The Counters view lists rescales; step to the end. Then toggle lazy rescaling and compare.',
    },
    {
      id: 'emulated',
      prompt: 'How many exponentials went through the polynomial exp2 on the FMA units in the loaded run?',
      kind: 'integer',
      answer: ({ run }) => run.result.stats?.emulatedExp2 ?? 0,
      explain: (_c, a) =>
        `${a}: from the second 32-column fragment to the one before the last, the last 4 of every 16 columns use the polynomial, on masked blocks too (entries the mask removed are exactly 0 and skip the exponential).`,
      hint: 'Work it out from the pattern: which columns of an unmasked interior block are emulated, and how many such rows × blocks are there?',
    },
    {
      id: 'exp2-us',
      prompt: 'In the hardware table, how many microseconds does exp2 emulation save on the B200?',
      kind: 'number',
      tolerance: 0.01,
      answer: ({ simulate }) => simulate('fa4', B200, { exp2Emulation: false }).timeUs - simulate('fa4', B200, {}).timeUs,
      explain: ({ simulate }, a) => {
        const on = simulate('fa4', B200, {}).utilization;
        const off = simulate('fa4', B200, { exp2Emulation: false }).utilization;
        const pct = (v: number | undefined) => `${Math.round((v ?? 0) * 100)}%`;
        return `${fmt(Number(a), 4)} µs in FlashScope's model. Without emulation the exponential unit (mufu) is busy ${pct(off.mufu)} of the time instead of ${pct(on.mufu)}, and the FMA units ${pct(off.fma)} instead of ${pct(on.fma)}: the polynomial moves work from the first to the second.`;
      },
      hint: 'Subtract the "all on" time from the "exp2 emulation off" time.',
    },
  ],
};
