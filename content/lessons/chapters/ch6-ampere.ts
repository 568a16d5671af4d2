// Chapter 6: what an Ampere/Ada kernel overlaps — the CuTe FA2 pipeline and TensorRT-LLM's fmha_v2.
import type { Chapter } from './types.ts';
import { firstIndex, fmt, lessonRequest } from './queries.ts';
import type { TraceEvent } from '../../../engine/api.ts';

const problem = { nq: 64, nk: 64, d: 16, dtype: 'fp16' as const };
const blocks = { blockM: 16, blockN: 16 };

/** The K load that lands between block 0's S = QKᵀ and its P·V: the prefetch. */
function prefetchIndex(ev: readonly TraceEvent[]): number {
  const qk0 = firstIndex(ev, (e) => e.kind === 'qk');
  const pv0 = firstIndex(ev, (e, i) => i > qk0 && e.kind === 'pv');
  return firstIndex(ev, (e, i) => i > qk0 && i < pv0 && e.kind === 'load' && e.tensors.includes('K'));
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
      text: 'Left: CuTe FA2, opened at the load of $K_1$ that is issued while block 0 is still in its softmax. Right: fmha_v2, opened at its first row-slice step, with the trace split by warp (the Formula view names the warp). The table runs the hardware model of both kernels on a full-size fp16 problem on the RTX 4060, the GPU the fmha_v2 run was recorded on.',
    },
  ],
  panes: [
    {
      label: 'CuTe FA2',
      preset: lessonRequest('cute-fa2', problem, blocks),
      target: { describe: 'the K prefetch issued during block 0', find: prefetchIndex },
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
      { algorithm: 'cute-fa2', gpu: 'rtx4060', features: {}, label: 'CuTe FA2 on RTX 4060' },
      { algorithm: 'fmha-v2', gpu: 'rtx4060', features: {}, label: 'fmha_v2 on RTX 4060' },
    ],
  },
  reference: ['cute-fa2', 'fmha-v2'],
  tryThis: [
    {
      label: 'Causal',
      look: 'Both kernels skip the blocks above the diagonal; the prefetch simply stops one block earlier.',
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
      id: 'prefetch-block',
      prompt: "In the CuTe FA2 pane: which K/V block's $K$ tile is loaded while block 0 is between $S_0 = QK_0^{\\top}$ and $P_0V_0$?",
      kind: 'integer',
      answer: ({ run }) => {
        const i = prefetchIndex(run.events);
        return i >= 0 ? run.events[i].tile.kvBlock : -1;
      },
      explain: (_c, a) => `Block ${a}: one tile of lookahead, so the copy of the next K overlaps this block's softmax.`,
      hint: 'Step from the first qk of the CuTe FA2 pane and watch which load comes before the first pv.',
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
      hint: 'Step through one K/V block of the fmha_v2 pane and count the distinct row slices (the Formula view shows the rows).',
    },
    {
      id: 'hw-ratio',
      prompt: "In the hardware table, divide fmha_v2's time by CuTe FA2's time on the RTX 4060. What is the ratio?",
      kind: 'number',
      tolerance: 0.01,
      answer: ({ simulate }) => simulate('fmha-v2', 'rtx4060', {}).timeUs / simulate('cute-fa2', 'rtx4060', {}).timeUs,
      explain: (_c, a) =>
        `${fmt(Number(a), 4)}: in FlashScope's model of the two schedules (a model, not a measurement) fmha_v2 is ${Number(a) < 1 ? 'the faster' : 'the slower'} of the two on this GPU and shape.`,
      hint: 'Divide the RTX 4060 fmha_v2 time by the RTX 4060 CuTe FA2 time.',
    },
  ],
  sources: [
    'CuTe FA2: 66RING/tiny-flash-attention, flash_attention_cutlass/csrc/flash_attention.cu@dacda431, l. 374 (the forward kernel) and l. 549–590 (the K/V loop with its cp.async prefetch); the 64 × 64 tiles and 4 warps chosen at l. 726.',
    "fmha_v2: NVIDIA/TensorRT-LLM, cpp/kernels/fmha_v2/src/fused_multihead_flash_attention_kernel_noloop_tiled.h@399fa2fb, device_flash_attention_nl_tiled from l. 25 (the SM89 FP16 kernel's K/V loop: V's copy issued during Q·Kᵀ, the running max and sum in global_max / global_sum).",
    'FA2 itself: "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", arXiv 2307.08691, §3.3 (work partitioning between warps).',
  ],
};
