// Chapter 6: what an Ampere/Ada kernel overlaps — the CuTe FA2 pipeline and TensorRT-LLM's fmha_v2.
import type { Chapter, HwRow } from './types.ts';
import { firstIndex, fmt, lessonRequest } from './queries.ts';
import type { TraceEvent } from '../../../engine/api.ts';

const problem = { nq: 64, nk: 64, d: 16, dtype: 'fp16' as const };
const blocks = { blockM: 16, blockN: 16 };
const RTX = 'rtx4060';

/** Microseconds a kernel's tensor cores are busy in the hardware model. */
const tensorBusyUs = (r: HwRow) => r.timeUs * (r.utilization.tensor ?? 0);

/** The first K load issued between a block's S = QKᵀ and its P·V: the prefetch (causal Q tile 0 has no next block to fetch). */
function prefetchIndex(ev: readonly TraceEvent[]): number {
  for (let qk = firstIndex(ev, (e) => e.kind === 'qk'); qk >= 0; qk = firstIndex(ev, (e, i) => i > qk && e.kind === 'qk')) {
    const pv = firstIndex(ev, (e, i) => i > qk && e.kind === 'pv');
    const k = firstIndex(ev, (e, i) => i > qk && (pv < 0 || i < pv) && e.kind === 'load' && e.tensors.includes('K'));
    if (k >= 0) return k;
  }
  return -1;
}

/** K tiles loaded before the first P·V, and that P·V's index. */
function kTilesBeforeFirstPv(ev: readonly TraceEvent[]): { tiles: number[]; pv: number } {
  const pv = firstIndex(ev, (e) => e.kind === 'pv');
  const tiles = ev
    .slice(0, pv < 0 ? ev.length : pv)
    .filter((e) => e.kind === 'load' && e.tensors.includes('K'))
    .map((e) => e.tile.kvBlock);
  return { tiles, pv };
}

export const chapter6: Chapter = {
  number: 6,
  slug: 'ampere-pipelines',
  title: 'CuTe FA2 and fmha_v2: overlap on Ampere and Ada',
  summary: 'cp.async prefetch of the next K/V tile, warps splitting the rows, what the hardware model says.',
  blocks: [
    {
      kind: 'p',
      text: "FA2's algorithm says nothing about time. On an Ampere (SM80) or Ada (SM89) GPU the copy engine for global-to-shared loads is asynchronous (cp.async): a warp issues a copy and keeps computing until it waits on it. A good kernel therefore asks for the next tile before it needs it.",
    },
    {
      kind: 'p',
      text: "The CuTe FA2 kernel (a compact CUTLASS implementation of FA2's forward) does this with one tile of lookahead: right after issuing $S_j = Q K_j^{\\top}$ it starts loading $K_{j+1}$, so the copy runs under the softmax of block $j$; right after issuing $P_j V_j$ it starts $V_{j+1}$, which lands while $S_{j+1}$ and its softmax are computed. Each warp owns a slice of the tile's rows and keeps their statistics in registers, so no warp ever waits for another warp's $m$ or $\\ell$.",
    },
    {
      kind: 'p',
      text: "TensorRT-LLM's fmha_v2 (its SM89 FP16 build, as on an RTX 4060) takes the same structure further for inference: $K$ and $V$ come in together into a ring of shared-memory stages, every warp runs the whole $S$, softmax, $PV$ sequence for its own rows (the trace lists one warp after another; on the GPU they run together), and an fp16-accumulation mode trades accuracy for tensor-core throughput on consumer GPUs.",
    },
    {
      kind: 'p',
      text: 'Left: CuTe FA2, opened at the first $K$ load that is issued while a block is still in its softmax. Right: fmha_v2, opened at its first row-slice step, with the trace split by warp (the step line under the buttons names the warp and the Formula view its row). The table runs the hardware model of both kernels on a full-size fp16 problem on the RTX 4060, the GPU the fmha_v2 run was recorded on.',
    },
  ],
  panes: [
    {
      label: 'CuTe FA2',
      preset: lessonRequest('cute-fa2', problem, blocks),
      target: { describe: 'the first K prefetch, issued while a block is in its softmax', find: prefetchIndex },
      views: ['heatmaps', 'stats', 'counters'],
    },
    {
      label: 'fmha_v2',
      preset: lessonRequest('fmha-v2', problem, blocks),
      target: { describe: "the first warp's first S slice", find: (ev) => firstIndex(ev, (e) => e.kind === 'qk' && e.warp !== undefined) },
      views: ['heatmaps', 'formula', 'stats', 'counters'],
    },
  ],
  hardware: {
    caption: 'Simulated kernel time, hardware model (engine/hw)',
    shapeNote: 'batch 4, 32 heads, N = 2048, d = 128, fp16',
    shape: { batch: 4, hq: 32, hk: 32, nq: 2048, nk: 2048, d: 128, dv: 128, dtype: 'fp16', causal: false },
    rows: [
      { algorithm: 'cute-fa2', gpu: RTX, features: {}, label: 'CuTe FA2 on RTX 4060' },
      { algorithm: 'fmha-v2', gpu: RTX, features: {}, label: 'fmha_v2 on RTX 4060' },
    ],
  },
  reference: ['cute-fa2', 'fmha-v2'],
  tryThis: [
    {
      label: 'Causal',
      look: 'Both kernels skip the blocks above the diagonal. $Q$ tile 0 now sees only block 0, so it has nothing to prefetch: the debugger opens at the first prefetch of $Q$ tile 1.',
      change: (r) => ({ ...r, problem: { ...r.problem, causal: true } }),
    },
    {
      label: 'Twice the keys (N_k = 128)',
      look: 'Twice the K/V blocks per row: each prefetch is still exactly one tile ahead.',
      change: (r) => ({ ...r, problem: { ...r.problem, nk: 128 } }),
    },
  ],
  questions: [
    {
      id: 'k-ahead',
      prompt: 'In the CuTe FA2 pane, step to the first $P_0V_0$ (the first pv step). How many $K$ tiles has the kernel loaded by then?',
      kind: 'integer',
      answer: ({ run }) => kTilesBeforeFirstPv(run.events).tiles.length,
      explain: ({ run }, a) => {
        const { tiles, pv } = kTilesBeforeFirstPv(run.events);
        return Number(a) > 1
          ? `${a} (K blocks ${tiles.join(' and ')}, by step ${pv + 1}): K₀ for S₀, then K₁ issued right after S₀, so its copy ran under block 0's softmax. One tile of lookahead: V₁ follows right after P₀V₀.`
          : `${a}: here the first Q tile has only one K/V block, so there is no next tile to fetch early.`;
      },
      hint: 'Step forward from the first qk and watch the step line: count the loads of K before the first pv (the Kᵀ heatmap fills in as they land).',
    },
    {
      id: 'warps',
      prompt: 'In the fmha_v2 pane: how many warps split the rows of one $Q$ tile?',
      kind: 'integer',
      answer: ({ run, runOther }) => {
        const ev = runOther({ ...run.request, algorithm: 'fmha-v2' }).events;
        return new Set(ev.filter((e) => e.warp !== undefined).map((e) => e.warp)).size;
      },
      explain: ({ run }, a) =>
        `${a} warps, each with ${Math.max(1, Math.round(run.result.blocks.blockM / Number(a)))} rows of the ${run.result.blocks.blockM}-row tile here; each keeps its own m and ℓ in registers.`,
      hint: 'Step through one K/V block of the fmha_v2 pane: the step line names each warp and its rows.',
    },
    {
      id: 'tensor-time',
      prompt:
        "Both kernels in the hardware table do the same matmuls. A kernel's tensor cores are busy for its time × its tensor share (units busy). How many times longer are CuTe FA2's tensor cores busy than fmha_v2's?",
      kind: 'number',
      // The table shows the shares as whole percents.
      tolerance: 0.02,
      answer: ({ simulate }) => tensorBusyUs(simulate('cute-fa2', RTX, {})) / tensorBusyUs(simulate('fmha-v2', RTX, {})),
      explain: ({ simulate }, a) => {
        const cute = simulate('cute-fa2', RTX, {});
        const v2 = simulate('fmha-v2', RTX, {});
        return `${fmt(Number(a), 3)}×: ${fmt(tensorBusyUs(cute), 5)} µs against ${fmt(tensorBusyUs(v2), 5)} µs. fmha_v2's build accumulates its fp16 matmuls in fp16, which GeForce Ada runs at twice the fp32-accumulate rate CuTe FA2 uses; the softmax then takes a larger share of fmha_v2's shorter time (fma ${Math.round(100 * (v2.utilization.fma ?? 0))}% against ${Math.round(100 * (cute.utilization.fma ?? 0))}%). This is FlashScope's model of the two schedules, not a measurement.`;
      },
      hint: 'For each row: time (µs) × tensor % / 100. Then divide CuTe FA2 by fmha_v2.',
    },
  ],
  sources: [
    'CuTe FA2: 66RING/tiny-flash-attention, flash_attention_cutlass/csrc/flash_attention.cu@dacda431, l. 374 (the forward kernel) and l. 549–590 (the K/V loop with its cp.async prefetch); its 64 × 64 tiles at l. 726; FlashScope steps and models the 128 × 64 tile with 4 warps that the CuTe forward of Dao-AILab/flash-attention picks on SM80 (flash_attn/cute/interface.py@0251105a, l. 327).',
    "fmha_v2: NVIDIA/TensorRT-LLM, cpp/kernels/fmha_v2/src/fused_multihead_flash_attention_kernel_noloop_tiled.h@399fa2fb, device_flash_attention_nl_tiled from l. 25 (the SM89 FP16 kernel's K/V loop: V's copy issued during Q·Kᵀ, the running max and sum in global_max / global_sum).",
    'FA2 itself: "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", arXiv 2307.08691, §3.3 (work partitioning between warps).',
  ],
};
