import { md, type AlgorithmLesson } from './types.ts';

const r = md;

export const cuteFa2Lesson: AlgorithmLesson = {
  id: 'cute-fa2',
  title: 'FlashAttention-2 in CuTe',
  hardware: 'Ampere (SM80): mma.sync m16n8k16, cp.async, ldmatrix',
  sources:
    'The CuTe FlashAttention-2 kernel of github.com/66RING/tiny-flash-attention (flash_attention_cutlass/standalone_src); its tile is the SM80 one of Dao-AILab/flash-attention, flash_attn/cute/interface.py@0251105a l. 326–327 and 775–777; the FA2 paper (arXiv 2307.08691) for the algorithm.',
  intro: r`This is FA2 as a hand-written CUTLASS CuTe kernel: the same online softmax, but every data movement
is spelled out, which makes it the clearest view of *where* each byte goes on an Ampere GPU.

**Shape.** $B_r = 128$, $B_c = 64$ with 4 warps at every head dimension (the tile the CuTe forward of
flash-attention picks on SM80; tiny-flash-attention's kernel uses 64 × 64); grid $(\lceil N_q/128\rceil,\ B\cdot H)$,
one CTA per Q tile. Each warp owns 32 rows of the tile (two M-slices of one \`mma.sync m16n8k16\`).

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
  steps: {
    skip: r`The $K/V$ blocks outside the range $[n_{\text{block,min}}, n_{\text{block,max}})$ hold no visible key for this $Q$ tile: no \`cp.async\` copy and no \`mma.sync\` for them.`,
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
    {
      variant: 'GQA / MQA',
      kernel: 'no',
      flashscope: 'runs',
      note: 'that kernel indexes K/V with the Q head; FlashScope reads head h / group',
    },
    {
      variant: 'Nq ≠ Nk',
      kernel: 'no',
      flashscope: 'runs',
      note: "causal aligned bottom-right (same as that kernel's top-left alignment when Nq = Nk)",
    },
    { variant: 'window, ALiBi, softcap, sinks', kernel: 'no', flashscope: 'runs', note: 'added the way FA2 does them' },
    { variant: 'fp32 inputs', kernel: 'no', flashscope: 'runs', note: 'the kernel is FP16/BF16' },
  ],
  content: {
    algorithm: 'cute-fa2',
    title: 'FlashAttention-2 in CuTe (Ampere)',
    source: '66RING/tiny-flash-attention, flash_attention_cutlass; tile 128 × 64, 4 warps (flash_attn/cute SM80)',
    lines: [
      { id: '', text: 'grid (⌈Nq/128⌉, B·H); one CTA per Q tile i', indent: 0 },
      { id: 'cute-fa2.loadQ', text: 'cp.async Q_i', indent: 1, kinds: ['load'] },
      { id: 'cute-fa2.loadK', text: 'cp.async K_j (prologue: K_first; in the loop: K_(j+1))', indent: 1 },
      { id: '', text: 'for j = n_min … n_max − 1:   (causal: stop at the diagonal)', indent: 1 },
      {
        id: 'cute-fa2.skip',
        text: 'outside [n_block_min, n_block_max): the K/V blocks the mask hides entirely are not visited',
        indent: 2,
        kinds: ['skip'],
      },
      { id: 'cute-fa2.loadV', text: 'wait for K_j; cp.async V_j', indent: 2 },
      { id: 'cute-fa2.qk', text: 'S = Q_i K_jᵀ   (gemm_smem; V_j copy in flight)', indent: 2, kinds: ['qk'] },
      { id: 'cute-fa2.mask', text: 'diagonal block: mask_within_nblock', indent: 2, kinds: ['mask'] },
      { id: 'cute-fa2.rowmax', text: 'wait for V_j; issue K_(j+1); m_new = max(m, rowmax(S))', indent: 2, kinds: ['rowmax'] },
      { id: 'cute-fa2.rescale', text: 'O ← e^(m − m_new) · O;  ℓ ← e^(m − m_new) · ℓ', indent: 2, kinds: ['rescale'] },
      { id: 'cute-fa2.exp', text: 'P = exp(S − m_new), converted to fp16 in registers', indent: 2, kinds: ['exp'] },
      { id: 'cute-fa2.rowsum', text: 'ℓ ← ℓ + rowsum(P)', indent: 2, kinds: ['rowsum'] },
      { id: 'cute-fa2.pv', text: 'O ← O + P V_j   (gemm_A_in_regs; K_(j+1) copy in flight)', indent: 2, kinds: ['pv'] },
      { id: 'cute-fa2.normalize', text: 'O = O / ℓ;  LSE = m + log ℓ', indent: 1, kinds: ['normalize'] },
      { id: 'cute-fa2.write', text: 'registers → shared memory → O_i in HBM', indent: 1, kinds: ['write'] },
    ],
    explain: {
      'cute-fa2.skip':
        'The kernel walks one contiguous range of K/V blocks per Q tile, from n_block_min to n_block_max. The blocks before and after that range hold no key the tile may see, so they are never copied or multiplied; inside the range a block the mask hides is computed and masked like any other.',
      'cute-fa2.loadQ': 'The prologue starts the copies of Q and of the first K block together.',
      'cute-fa2.loadK':
        'The next K block is requested only after V_j has landed, so one K buffer is enough; the copy runs under the softmax and the P·V GEMM.',
      'cute-fa2.loadV': 'V_j is requested right before the first GEMM of the block, so its copy overlaps Q·K_jᵀ.',
      'cute-fa2.qk': 'Operands stream from shared memory to registers with ldmatrix, one k-slice ahead of the mma.sync that consumes them.',
      'cute-fa2.mask':
        'Only blocks that cross the diagonal are masked element by element; blocks above it were never visited (early exit).',
      'cute-fa2.rowmax': 'Thread-local max, then a warp-shuffle reduction over the 4 threads that hold a row.',
      'cute-fa2.rescale': 'softmax_rescale_o rescales O and ℓ before the new exponentials are added.',
      'cute-fa2.exp':
        'Exponentials via exp2 with the scale folded in; the fp32 accumulator layout of S equals the A-operand layout of the next mma, so P is converted in place.',
      'cute-fa2.rowsum': 'The new row sums are added to the rescaled ℓ.',
      'cute-fa2.pv': 'O += P V_j with P already in registers.',
      'cute-fa2.normalize': 'One division per row after the loop; the LSE is kept for the backward pass.',
      'cute-fa2.write': 'The output is staged through shared memory for wide stores.',
    },
    corrections: null,
  },
};
