import { md, type AlgorithmLesson } from './types.ts';

const r = md;

export const cuteFa2Lesson: AlgorithmLesson = {
  id: 'cute-fa2',
  title: 'FlashAttention-2 in CuTe',
  hardware: 'Ampere (SM80): mma.sync m16n8k16, cp.async, ldmatrix',
  sources: 'Seed 002 (a from-scratch CuTe FlashAttention-2 walkthrough).',
  intro: r`This is FA2 as a hand-written CUTLASS CuTe kernel: the same online softmax, but every data movement
is spelled out, which makes it the clearest view of *where* each byte goes on an Ampere GPU.

**Shape.** $B_r = B_c = 64$ with 4 warps; grid $(\lceil N_q/64\rceil,\ B\cdot H)$, one CTA per Q tile.
Each warp owns 16 rows of the tile (the M of one \`mma.sync m16n8k16\`).

**Fusing the two GEMMs.** $S = QK^\top$ ends in accumulator registers laid out as the C fragment of
\`SM80_16x8x16_F32F16F16F32_TN\`. That layout happens to match the A-operand layout of the same instruction,
so after the softmax $P$ is converted to FP16 *in place* and fed to $O \mathrel{+}= PV$ without touching
shared memory.

**The cp.async pipeline.** Loads are asynchronous copies that complete in order of their fences:
- prologue: copy $Q$ and $K_0$;
- block $j$: wait for $K_j$ → issue $V_j$ → $S = QK_j^\top$ (the $V_j$ copy overlaps this GEMM) → mask →
  wait for $V_j$ → issue $K_{j+1}$ → softmax and rescale → $O \mathrel{+}= PV_j$ (the $K_{j+1}$ copy
  overlaps the softmax and this GEMM).

One K and one V buffer suffice because each copy is issued only after the buffer's previous content has
been consumed.

**Causal early exit.** With a causal mask the loop stops at $n_{\max} = \lceil (i+1)B_r/B_c \rceil$: blocks
above the diagonal are neither loaded nor computed — about half of all blocks for $N_q = N_k$. Only blocks
crossing the diagonal are masked element by element.

**Softmax in registers.** \`softmax_rescale_o\` first reduces the new row max (threads of a row exchange
partial maxima with warp shuffles), rescales $O$ and $\ell$ by $e^{m_{\text{old}}-m_{\text{new}}}$, then
exponentiates and adds the new row sums.`,
  lines: {
    'cute-fa2.loadQ': { indent: 1, text: r`cp.async $Q_i$ (and $K_{n_{\min}}$), fence` },
    'cute-fa2.loadK': { indent: 2, text: r`cp.async $K_{j}$ into the K buffer, fence` },
    'cute-fa2.loadV': { indent: 2, text: r`wait for $K_j$; cp.async $V_j$, fence` },
    'cute-fa2.qk': { indent: 2, text: r`$S = Q_iK_j^\top$ (\texttt{gemm\_smem}, ldmatrix + mma.sync)` },
    'cute-fa2.mask': { indent: 2, text: r`diagonal block only: \texttt{mask\_within\_nblock}` },
    'cute-fa2.rowmax': { indent: 2, text: r`$m_{\text{new}} = \max(m, \operatorname{rowmax}S)$` },
    'cute-fa2.rescale': { indent: 2, text: r`$O \mathrel{*}= e^{m-m_{\text{new}}}$, $\ell \mathrel{*}= e^{m-m_{\text{new}}}$` },
    'cute-fa2.exp': { indent: 2, text: r`$P = e^{S-m_{\text{new}}}$, converted to FP16 in registers` },
    'cute-fa2.rowsum': { indent: 2, text: r`$\ell \mathrel{+}= \operatorname{rowsum}P$` },
    'cute-fa2.pv': { indent: 2, text: r`$O \mathrel{+}= PV_j$ (\texttt{gemm\_A\_in\_regs})` },
    'cute-fa2.normalize': { indent: 1, text: r`$O = O/\ell$, $\text{LSE} = m + \log\ell$` },
    'cute-fa2.write': { indent: 1, text: r`registers → shared memory → HBM` },
  },
  steps: {
    load: r`A \`cp.async\` copy: 16-byte vector loads that bypass registers. The position of each load event is
the point where the kernel *issues* it; the copy then runs underneath the next GEMM.`,
    qk: r`$S = Q_iK_j^\top$ with the operands streamed from shared memory to registers by \`ldmatrix\`, one
k-slice ahead of the \`mma\` that uses it.`,
    mask: r`Only blocks that cross the causal diagonal (or a window edge) need per-element masking.`,
    rowmax: r`Thread-local max, then a shuffle reduction across the 4 threads holding a row.`,
    rescale: r`Both the accumulator and the running sum are multiplied by $e^{m_{\text{old}}-m_{\text{new}}}$ before the
new block's exponentials are added.`,
    exp: r`$e^{S-m}$ computed as $2^{S\log_2 e - m\log_2 e}$ (one FMA + \`exp2\`), then converted to FP16 as the A
operand of the second GEMM.`,
    rowsum: r`The new block's row sums are added to the rescaled $\ell$.`,
    pv: r`$O \mathrel{+}= PV_j$ with $P$ already in registers; only $V_j$ comes from shared memory.`,
    normalize: r`One division per row after the loop; LSE $= m + \log\ell$ saved for the backward pass.`,
    write: r`The output goes through shared memory so the global stores are wide and coalesced.`,
  },
  features: [],
  support: [
    { variant: 'causal', kernel: 'yes', flashscope: 'runs', note: 'early exit + in-block mask' },
    { variant: 'GQA / MQA', kernel: 'no', flashscope: 'runs', note: 'the seed\'s kernel indexes K/V with the Q head; FlashScope reads head h / group' },
    { variant: 'Nq ≠ Nk', kernel: 'no', flashscope: 'runs', note: 'causal aligned bottom-right (same as the seed when Nq = Nk)' },
    { variant: 'window, ALiBi, softcap, sinks', kernel: 'no', flashscope: 'runs', note: 'added the way FA2 does them' },
    { variant: 'fp32 inputs', kernel: 'no', flashscope: 'runs', note: 'the kernel is FP16/BF16' },
  ],
  corrections: [
    r`Seed 002's pipeline pseudo-code writes \`async_load(k[nbi])\` after the softmax; the kernel it describes (and FlashScope) loads the *next* block, $K_{j+1}$.`,
    r`Seed 002 orders the loop as "qk, online_softmax, PV, then rescale(out)"; the rescale of $O$ happens inside the online softmax of every block, and only the final division by $\ell$ is after the loop.`,
  ],
};
