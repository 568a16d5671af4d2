// Chapter 4: FlashAttention (FA1) — tiling, loop order, O/ℓ/m in HBM, IO complexity.
import type { Chapter } from './types.ts';
import { covers, firstIndex, fmt, fmtBytes, lessonRequest } from './queries.ts';
import type { TraceEvent } from '../../../engine/api.ts';
import { fa1IoSweep } from './io-sweep.ts';

/** Steps that write m for row 0: the initial m = −∞ and one per K/V block. */
const mWritesOfRow0 = (events: readonly TraceEvent[]) =>
  events.filter((e) => e.kind === 'write' && e.tensors.includes('m') && covers(e, 0)).length;

export const chapter4: Chapter = {
  number: 4,
  slug: 'fa1',
  title: 'FA1: tiling and IO complexity',
  summary: 'K/V blocks outside, Q blocks inside, O, ℓ and m kept in HBM; Θ(N²d²/M) bytes.',
  blocks: [
    {
      kind: 'p',
      text: "FlashAttention puts chapter 3's recurrence on a GPU. On-chip memory of $M$ words must hold a $Q$ tile, a $K$ tile, a $V$ tile and an output tile at once, which fixes the block sizes:",
    },
    {
      kind: 'math',
      tex: 'B_c = \\left\\lceil \\frac{M}{4d} \\right\\rceil,\\qquad B_r = \\min\\!\\left(\\left\\lceil \\frac{M}{4d} \\right\\rceil,\\ d\\right)',
    },
    {
      kind: 'p',
      text: 'The outer loop walks the $T_c = N/B_c$ blocks of $K$ and $V$; each stays on chip while the inner loop brings every $Q$ block past it. Because a $Q$ block meets its K/V blocks in different outer iterations, its output $O_i$ and its statistics $\\ell_i$, $m_i$ must wait in HBM between visits: read, updated, written back, once per K/V block. For each pair $(i, j)$ FA1 computes',
    },
    {
      kind: 'math',
      tex: '\\tilde m_{ij} = \\mathrm{rowmax}(S_{ij}),\\qquad \\tilde P_{ij} = \\exp(S_{ij} - \\tilde m_{ij}),\\qquad m^{\\text{new}}_i = \\max(m_i, \\tilde m_{ij})',
    },
    {
      kind: 'math',
      tex: '\\ell^{\\text{new}}_i = e^{m_i - m^{\\text{new}}_i}\\,\\ell_i + e^{\\tilde m_{ij} - m^{\\text{new}}_i}\\,\\mathrm{rowsum}(\\tilde P_{ij})',
    },
    {
      kind: 'math',
      tex: '\\begin{aligned} O_i \\leftarrow{} & \\mathrm{diag}(\\ell^{\\text{new}}_i)^{-1}\\Big(\\mathrm{diag}(\\ell_i)\\, e^{m_i - m^{\\text{new}}_i} O_i \\\\ & + e^{\\tilde m_{ij} - m^{\\text{new}}_i}\\, \\tilde P_{ij} V_j\\Big) \\end{aligned}',
    },
    {
      kind: 'erratum',
      text: 'Appendix C of "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness" (arXiv 2205.14135) proves this update correct, but one line of the proof writes $\\mathrm{diag}(\\ell^{(j)})$ where $\\mathrm{diag}(\\ell^{(j)})^{-1}$ is meant. Algorithm 1 itself, and the update above, divide by $\\ell^{\\text{new}}_i$.',
    },
    {
      kind: 'h',
      text: 'How many bytes?',
    },
    {
      kind: 'p',
      text: "$K$ and $V$ are read once. Each of the $T_c$ outer iterations reads all of $Q$ and reads and writes all of $O$: $\\Theta(T_c\\, N d) = \\Theta(N^2 d^2 / M)$ bytes, since $T_c = 4Nd/M$. The bound holds for $d \\le M \\le Nd$. Against standard attention's $\\Theta(N^2)$ it wins by a factor of about $M/d^2$: with $d$ = 64 to 128 and $M$ around 100 KB, $d^2$ is many times smaller than $M$. And it shrinks as $M$ grows. The table below runs FA1 counters-only (no trace) on $N = 256$, $d = 16$ for five sizes of $M$ and divides the measured bytes by $N^2 d^2/M$: the quotient stays nearly constant, rising as $M$ nears $Nd$ where the $K$ and $V$ reads no longer vanish next to the rest. Under the table is standard attention on the same problem. With $d = 16$, $d^2$ is 256 words (1 KiB): at the two smallest $M$ FA1 moves **more** bytes than standard attention, and it wins from $M = 4d^2$ on. The paper's regime is $M$ many times $d^2$.",
    },
    { kind: 'widget', widget: 'io-sweep' },
    {
      kind: 'p',
      text: 'The debugger holds $N = 32$, $d = 16$ with $M = 2$ KiB, which is 512 fp32 words: $B_c = \\lceil 512 / 64 \\rceil = 8$ and $B_r = \\min(8, 16) = 8$. It opens where $O_0$, $\\ell_0$ and $m_0$ are read back from HBM for the first time, at the second K/V block; the HBM m and ℓ view shows the values waiting there.',
    },
  ],
  panes: [
    {
      preset: lessonRequest('fa1', { nq: 32, nk: 32, d: 16 }, { sramBytes: 2048 }),
      target: {
        describe: 'the first time O₀, ℓ₀, m₀ are read back from HBM',
        find: (ev) => firstIndex(ev, (e) => e.kind === 'load' && e.tile.qBlock === 0 && e.tile.kvBlock > 0 && e.tensors.includes('O')),
        fallback: {
          describe: 'the write of O₀, ℓ₀, m₀ after the only K/V block (one block covers every key, so nothing is read back)',
          find: (ev) => firstIndex(ev, (e) => e.kind === 'write' && e.tile.qBlock === 0 && e.tile.kvBlock >= 0 && e.tensors.includes('O')),
        },
      },
      views: ['heatmaps', 'hbm', 'counters', 'pseudo'],
    },
  ],
  tryThis: [
    {
      label: 'Less on-chip memory (M = 1 KiB)',
      look: 'Blocks of 4: twice the outer iterations, so O is read and written twice as often.',
      change: (r) => ({ ...r, blocks: { sramBytes: 1024 } }),
    },
    {
      label: 'More on-chip memory (M = 8 KiB)',
      look: '$B_c = 32$: one K/V block covers all keys, and O goes to HBM once.',
      change: (r) => ({ ...r, blocks: { sramBytes: 8192 } }),
    },
    {
      label: 'N = 64',
      look: 'The O traffic grows with $N^2$ at fixed $M$ — still without an $N\\times N$ matrix in HBM.',
      change: (r) => ({ ...r, problem: { ...r.problem, nq: 64, nk: 64 } }),
    },
  ],
  questions: [
    {
      id: 'o-read',
      prompt: 'How many bytes of $O$ does FA1 read from HBM over this whole run?',
      kind: 'integer',
      shownAs: 'counter',
      answer: ({ run }) => run.result.counters.hbmRead.O ?? 0,
      explain: ({ run }, a) => {
        const p = run.request.problem;
        const tc = Math.ceil(p.nk / run.result.blocks.blockN);
        return `${fmtBytes(Number(a))}: every one of the ${tc} K/V blocks reads all ${p.nq} output rows of width ${p.dv}.`;
      },
      hint: 'Step to the end and read the O row of the Counters view (read column).',
    },
    {
      id: 'm-writes',
      prompt: "How many times does FA1 write row 0's running max $m_0$ to HBM over the whole run?",
      kind: 'integer',
      answer: ({ run }) => mWritesOfRow0(run.events),
      explain: ({ run }, a) => {
        const p = run.request.problem;
        const tc = Math.ceil(p.nk / run.result.blocks.blockN);
        const bytes = run.result.counters.hbmWritten.m ?? 0;
        const each = bytes / (Number(a) * p.nq * p.batch * p.hq);
        return `${a}: once before the loops, where Algorithm 1 sets m = −∞ in HBM, then once after each of the ${tc} K/V blocks, because m waits in HBM between visits. The Counters view agrees: m written ${fmtBytes(bytes)} = ${a} writes × ${p.nq} rows × ${each} bytes.`;
      },
      hint: 'Count the steps that write m to HBM for Q block 0 (the pseudo-code names each write), including the one before the loops; or divide the m figure in the written row of the Counters view by the bytes of one full write of m (one fp32 number per row).',
    },
    {
      id: 'sweep-factor',
      prompt:
        "From the table: when $M$ doubles from 4 KiB to 8 KiB, by what factor does FA1's total HBM traffic shrink (bytes at 4 KiB divided by bytes at 8 KiB)?",
      kind: 'number',
      tolerance: 0.01,
      answer: () => {
        const pts = fa1IoSweep();
        const at = (b: number) => pts.find((p) => p.sramBytes === b)!.hbmBytes;
        return at(4096) / at(8192);
      },
      explain: (_c, a) =>
        `${fmt(Number(a), 4)} — close to 2, as Θ(N²d²/M) predicts; a little less because K and V are read once whatever M is.`,
      hint: 'Divide the HBM bytes of the 4 KiB row by those of the 8 KiB row.',
    },
  ],
  sources: [
    '"FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness", arXiv 2205.14135: §3.1 (Algorithm 1, block sizes from $M$), §3.2 (Theorem 2, the IO complexity), Appendix C (the proof with the $\\mathrm{diag}(\\ell)$ slip).',
    'The slip in Appendix C, as the authors confirmed it: Dao-AILab/flash-attention, GitHub issue 273.',
  ],
};
