// Chapter 10: the backward pass — P recomputed from the LSE, the D trick, K/V-outer loops,
// dQ accumulated with atomics, and what determinism costs.
import type { Chapter } from './types.ts';
import { firstIndex, fmt, fmtBytes, lessonRequest, type EventOf } from './queries.ts';
import { dtypeBytes, type LoadRequest, type TraceEvent } from '../../../engine/api.ts';

const problem = { nq: 32, nk: 32, d: 16, dtype: 'fp16' as const };
const blocks = { blockM: 8, blockN: 8 };
const backward = (algorithm: string): LoadRequest => ({ ...lessonRequest(algorithm, problem, blocks), pass: 'backward' });

/** The first atomic add into dQ that other workers would make at the same moment. */
const firstCollidingAdd = (ev: readonly TraceEvent[]) => firstIndex(ev, (e) => e.kind === 'dq' && e.atomic && e.collidesWith.length > 0);

/** The K/V-block workers that add into one dQ row block of head 0, in the order of their adds. */
const workersOfRowBlock = (events: readonly TraceEvent[], qBlock: number) => [
  ...new Set(
    events.filter((e): e is EventOf<'dq'> => e.kind === 'dq' && e.b === 0 && e.h === 0 && e.tile.qBlock === qBlock).map((e) => e.worker),
  ),
];

/** D of `row` as the backward computed it (its dsum step; FA1 computes it in every inner step, the values agree). */
function dOfRow(events: readonly TraceEvent[], row: number): number {
  const e = events.find(
    (x): x is EventOf<'dsum'> => x.kind === 'dsum' && x.b === 0 && x.h === 0 && row >= x.tile.rows[0] && row < x.tile.rows[1],
  );
  return e ? e.D[row - e.tile.rows[0]] : NaN;
}

export const chapter10: Chapter = {
  number: 10,
  slug: 'backward',
  title: 'The backward pass',
  summary: 'P recomputed from the LSE, D = rowsum(dO ∘ O), K/V blocks outside, dQ by atomic adds.',
  blocks: [
    {
      kind: 'p',
      text: 'Training needs the gradients of a loss with respect to $Q$, $K$ and $V$. The backward pass receives $dO = \\partial\\mathcal{L}/\\partial O$, one row per query like $O$, and the chain rule through $S = \\tau QK^{\\top}$, $P = \\mathrm{softmax}(S)$ and $O = PV$ gives five matrix products:',
    },
    {
      kind: 'math',
      tex: 'dV = P^{\\top} dO,\\qquad dP = dO\\, V^{\\top},\\qquad dS_{ij} = P_{ij}\\,(dP_{ij} - D_i),\\qquad dQ = \\tau\\, dS\\, K,\\qquad dK = \\tau\\, dS^{\\top} Q',
    },
    {
      kind: 'p',
      text: "with $D_i = \\sum_j P_{ij}\\, dP_{ij}$ from the softmax's Jacobian. Counting the recomputation of $S = \\tau QK^{\\top}$, the backward runs five matmuls where the forward runs two, which is why FLOP rates for the backward are quoted with 2.5 times the forward's FLOPs.",
    },
    { kind: 'h', text: 'Why P is recomputed, not stored' },
    {
      kind: 'p',
      text: 'Standard attention writes $S$ and $P$ to HBM in the forward pass and reads $P$ back in the backward: $N_q \\times N_k$ numbers per head, kept alive from the forward to the backward. For a training run with $N$ = 8192 that is 128 MiB per head in fp16, more than the weights of many layers. FlashAttention keeps only the log-sum-exp $L_i = m_i + \\log \\ell_i$, one number per row, and rebuilds each tile when it needs it:',
    },
    { kind: 'math', tex: 'S_{ij} = \\tau\\, Q_i K_j^{\\top},\\qquad P_{ij} = \\exp(S_{ij} - L_i)' },
    {
      kind: 'p',
      text: 'The price is one extra matmul per tile, done on chip from tiles already loaded; the gain is memory linear in $N$ and no $P$ traffic at all. The Counters view of the standard backward below lists the bytes of $P$ it reads; the FA2 pane reads none, only $L$. In the heatmaps, the recomputed $P$ sits next to the $P$ a standard forward would have stored: they agree to the last bits of the dtype.',
    },
    { kind: 'goto', pane: 0, label: 'FA2 recomputing its first P tile', find: (ev) => firstIndex(ev, (e) => e.kind === 'recompute') },
    {
      kind: 'goto',
      pane: 1,
      label: 'the standard backward reading the stored P',
      find: (ev) => firstIndex(ev, (e) => e.kind === 'load' && e.tensors.includes('P')),
    },
    { kind: 'h', text: 'The D trick' },
    {
      kind: 'p',
      text: '$D_i$ sums over a whole row of $P \\circ dP$, but the tiled loop never holds a whole row. The sum can be rewritten with what the forward already produced:',
    },
    {
      kind: 'math',
      tex: '\\begin{aligned} D_i &= \\sum_j P_{ij}\\, (dO_i \\cdot V_j) = dO_i \\cdot \\Big(\\sum_j P_{ij} V_j\\Big) \\\\ &= dO_i \\cdot O_i = \\mathrm{rowsum}(dO_i \\circ O_i) \\end{aligned}',
    },
    {
      kind: 'p',
      text: "So FA2 runs a small preprocessing pass before the main loop: $d_v$ multiply-adds per row give $D$, one number per query row, written to HBM next to $L$. Every tile then has what $dS_{ij} = P_{ij}(dP_{ij} - D_i)$ needs. FA1's Algorithm 4 computes the same $D_i$ inside its inner loop from the $dO_i$ and $O_i$ tiles it loads there.",
    },
    {
      kind: 'goto',
      pane: 0,
      label: 'the preprocessing step that computes D for row block 0',
      find: (ev) => firstIndex(ev, (e) => e.kind === 'dsum'),
    },
    { kind: 'h', text: 'Why the loop order flips' },
    {
      kind: 'p',
      text: 'Look at what each gradient sums over. $dV_j = \\sum_i P_{ij}^{\\top} dO_i$ and $dK_j = \\tau \\sum_i dS_{ij}^{\\top} Q_i$ sum over query blocks $i$; $dQ_i = \\tau\\sum_j dS_{ij} K_j$ sums over key blocks $j$. Two of the three outputs belong to a K/V block, so the backward puts K/V blocks in the outer loop: $dK_j$ and $dV_j$ stay on chip for the whole inner loop over $Q$ blocks and are written once. In FA2 each K/V block is one worker (thread block), which also gives the GPU $T_c$ independent pieces of work per head.',
    },
    {
      kind: 'goto',
      pane: 0,
      label: 'the first write of dK_j and dV_j, after worker 0 has seen every Q block',
      find: (ev) => firstIndex(ev, (e) => e.kind === 'write' && e.tensors.includes('dK')),
    },
    { kind: 'h', text: 'Why dQ needs atomics' },
    {
      kind: 'p',
      text: 'The remaining gradient, $dQ_i$, now collects one term from every K/V block, and in FA2 those terms come from different workers running at the same time. Each adds its $\\tau\\, dS_{ij} K_j$ into a float32 accumulator in HBM with atomic adds, so two workers writing the same row block never lose an update. FA1 runs its loops in one sequence and instead reads $dQ_i$ from HBM, adds, and writes it back at every inner step. The dQ accumulation view marks, for the current step, which K/V-block workers have added into which row block of $dQ$, and where adds of different workers meet.',
    },
    { kind: 'goto', pane: 0, label: 'an atomic add into dQ that other workers would make at the same moment', find: firstCollidingAdd },
    {
      kind: 'p',
      text: "Floating-point addition is not associative: when the order in which workers' adds land changes from run to run, the last bits of $dQ$ change too. FA3's deterministic mode fixes the order: the worker of K/V block $j$ waits until block $j - 1$ has added into row block $i$ before it adds. The result is bit-for-bit repeatable, and the waiting costs throughput. After the main loop a small post-processing step converts the float32 $dQ$ accumulator to the input dtype and applies the scale.",
    },
    {
      kind: 'more',
      summary: 'A third way: integer adds, deterministic without waiting',
      text: "There is a third way, and FlashScope's WebGPU backward takes it because WGSL has atomics on 32-bit integers only: add integers. Before the main kernel, each row $i$ gets a bound $B_i = \\tau \\max|K| \\, (\\lVert dO_i \\rVert \\max_j \\lVert V_j \\rVert + |D_i|)$ that no partial sum of $dQ_i$ can exceed (Cauchy–Schwarz, and the $P_{ij}$ of a row sum to at most 1), and every term is added as the integer $\\mathrm{round}(x \\cdot 2^{29 - \\lceil \\log_2 B_i \\rceil})$. Integer addition is associative, so the sum is the same whatever order the workers add in: deterministic without any waiting, at the price of rounding each term to $B_i \\cdot 2^{-30}$, far below the fp16 rounding of $dS$ itself. The WebGPU panel under the Single tab's debugger runs it (pass Backward, backward kernel “f16 subgroup matrices”) where the GPU offers them.",
    },
  ],
  panes: [
    {
      label: 'FA2 backward',
      preset: backward('fa2'),
      target: {
        describe: 'the first atomic add into dQ that other workers would make at the same moment',
        find: firstCollidingAdd,
        fallback: {
          describe:
            "worker 1's first atomic add into dQ: with the mask it starts at row block 1, and no other worker adds there at the same moment",
          find: (ev) => firstIndex(ev, (e) => e.kind === 'dq' && e.atomic && e.worker === 1),
        },
      },
      views: ['heatmaps', 'dq-accum', 'formula', 'counters', 'pseudo'],
    },
    {
      label: 'Standard backward',
      preset: backward('standard'),
      target: {
        describe: 'the standard backward reading the stored P',
        find: (ev) => firstIndex(ev, (e) => e.kind === 'load' && e.tensors.includes('P')),
      },
      views: ['heatmaps', 'counters', 'pseudo'],
    },
  ],
  tryThis: [
    {
      label: 'Causal',
      look: 'Worker $j$ starts at row block $j$: the masked tiles are skipped, and in the dQ accumulation view no two workers meet on a row block at the same moment.',
      change: (r) => ({ ...r, problem: { ...r.problem, causal: true } }),
    },
    {
      label: 'N = 64',
      look: "The standard backward's $P$, $dP$ and $dS$ traffic grows four times; FA2's grows with the number of K/V blocks only.",
      change: (r) => ({ ...r, problem: { ...r.problem, nq: 64, nk: 64 } }),
    },
    {
      label: 'bf16 inputs',
      look: "P and dS are rounded to bf16's 8 significant bits before their matmuls; the recomputed P still matches the stored one to that rounding.",
      change: (r) => ({ ...r, problem: { ...r.problem, dtype: 'bf16' } }),
    },
  ],
  questions: [
    {
      id: 'p-bytes',
      prompt: "How many bytes of $P$ does the standard backward read from HBM for this problem? (FA2's backward reads none.)",
      kind: 'integer',
      shownAs: 'counter',
      answer: ({ run, runOther }) => runOther({ ...run.request, algorithm: 'standard' }).result.counters.hbmRead.P ?? 0,
      explain: ({ run, runOther }, a) => {
        const p = run.request.problem;
        const fa2 = runOther({ ...run.request, algorithm: 'fa2' }).result.counters;
        return `${fmtBytes(Number(a))}: P is stored as ${p.nq} × ${p.nk} values of ${dtypeBytes(p.dtype)} bytes (${p.dtype}), and the standard backward reads it twice, for dV = Pᵀ·dO and again for dS = P ∘ (dP − D). FA2 reads ${fmtBytes(fa2.hbmRead.LSE ?? 0)} of LSE instead and rebuilds each P tile on chip.`;
      },
      hint: 'In the Standard backward pane, step to the end and read P in the HBM read line of the Counters view.',
    },
    {
      id: 'd-row',
      prompt: 'What is $D_0 = \\mathrm{rowsum}(dO_0 \\circ O_0)$ in the FA2 pane? Four significant digits are enough.',
      kind: 'number',
      tolerance: 1e-3,
      answer: ({ run }) => dOfRow(run.events, 0),
      explain: (_c, a) => `D₀ = ${fmt(Number(a), 6)}: the same number as Σⱼ P₀ⱼ dP₀ⱼ, without ever holding row 0 of P or dP whole.`,
      hint: 'Step to the dsum step of Q block 0 (before the main loop): the Formula view shows D for the first row of the block.',
    },
    {
      id: 'atomic-adds',
      prompt: "How many fp32 values does FA2's backward add atomically into the dQ accumulator for the loaded problem?",
      kind: 'integer',
      answer: ({ run }) => run.result.counters.atomicAdds,
      explain: ({ run }, a) => {
        const p = run.request.problem;
        return `${Number(a).toLocaleString('en-US')}: every visible tile (i, j) adds its ${run.result.blocks.blockM} × ${p.d} block of dQ, once per K/V worker that sees those rows.`;
      },
      hint: 'The Counters view of the FA2 pane counts atomic adds; step to the end.',
    },
    {
      id: 'row-block-workers',
      prompt:
        'How many K/V-block workers add into row block 1 of $dQ$ (rows 8–15) in the loaded FA2 run? Then load **Causal** (Try this) and answer again.',
      kind: 'integer',
      answer: ({ run }) => workersOfRowBlock(run.events, 1).length,
      explain: ({ run }, a) => {
        const w = workersOfRowBlock(run.events, 1);
        const bm = run.result.blocks.blockM;
        return run.request.problem.causal
          ? `${a} (workers ${w.join(', ')}): with the causal mask rows ${bm}–${2 * bm - 1} see keys 0–${2 * bm - 1} only, which lie in the K/V blocks of those workers; every other worker's keys are hidden from them, which is why worker j starts its loop at row block j.`
          : `${a} (workers ${w.join(', ')}): every worker walks every Q block, so each K/V block's τ·dS·K term reaches row block 1 from its own worker, and those adds meet in HBM; that is what the atomics are for.`;
      },
      hint: 'The dQ accumulation view has one row per dQ row block and one column per worker; at the end of the run every cell that adds is filled.',
    },
  ],
  sources: [
    '"FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", arXiv 2205.14135, §3.1 (recomputation) and Appendix B.2 (the memory-efficient backward pass, $D_i$).',
    '"FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", arXiv 2307.08691, §3.1.2 (the backward pass: K/V-outer loop, dQ by atomic adds).',
    'Dao-AILab/flash-attention, hopper/flash_bwd_preprocess_kernel.h@0251105a, l. 201–221 ($D = \\mathrm{rowsum}(dO \\circ O)$ per row); hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp@0251105a, l. 647 (dQ added into the fp32 accumulator by a TMA reduce-add) and l. 960–992 (the same by atomicAdd); hopper/flash_bwd_postprocess_kernel.h@0251105a, l. 214–216 (dQ converted from the fp32 accumulator); hopper/test_flash_attn_bwd_determinism.py@0251105a, l. 303–334 (the deterministic mode gives bit-identical gradients).',
  ],
};
