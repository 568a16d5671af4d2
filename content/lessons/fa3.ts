import { md, type AlgorithmLesson } from './types.ts';

const r = md;

export const fa3Lesson: AlgorithmLesson = {
  id: 'fa3',
  title: 'FlashAttention-3',
  hardware: 'Hopper (SM90): TMA copies, wgmma on warpgroups, setmaxnreg',
  sources:
    '"FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision" (arXiv 2407.08608), §3.1–3.3 and Algorithms 1–2; the shipped kernel, hopper/ at Dao-AILab/flash-attention 0251105a (tile_size.h, mainloop_fwd_sm90_tma_gmma_ws.hpp, flash_fwd_kernel_sm90.h).',
  intro: r`FlashAttention-3 keeps FA2's arithmetic — an online softmax over K/V blocks with one division at the
end — and reorganizes *who* does it and *when*, so that Hopper's asynchronous units are never idle.

**Warp specialization.** A CTA owns one Q tile. One *producer* warp does nothing but issue TMA copies:
first $Q_i$, then $K_j$ and $V_j$ into two-stage shared-memory rings. The *consumer* warpgroups (128
threads each, one $64$-row slice of the tile each) run the two GEMMs with \`wgmma\` and the softmax in
registers. \`setmaxnreg\` moves registers from the producer (which needs few) to the consumers.

**Reverse block order.** The kernel walks K/V blocks from the last to the first. Under a causal mask
the last block is the one on the diagonal, so the only block that needs masking comes first.

**Intra-warpgroup overlap.** A naive consumer waits for $S_j = Q_iK_j^\top$, then exponentiates, then
multiplies by $V_j$ — the tensor cores idle during the softmax. FA3 keeps two score buffers and
issues $S_{\text{next}} = Q_iK_j^\top$ *before* $O \mathrel{+}= P_{\text{cur}}V_{j-1}$; the softmax of
$S_{\text{next}}$ then runs while that second GEMM is in flight, and $O$ is rescaled once it lands.
The trace therefore interleaves two K/V blocks. Nothing changes numerically:
$$O \leftarrow \big(O + P_{j-1}V_{j-1}\big)\,e^{m_{j-1}-m_j}$$
is the same product whether the addition happens before the rescale (overlap) or the rescale before the
next addition (no overlap).

**Pingpong.** With two consumer warpgroups, a scheduler barrier makes them take turns on the tensor
cores: while warpgroup 0 computes its softmax, warpgroup 1 runs its GEMMs, and the other way round. The
warpgroups own different rows, so this reorders independent work; FlashScope shows each warpgroup's
rows as their own unit of events. The kernel has the barrier only for 16-bit inputs at $d\le128$ and
FP8 at $d\ge128$ (UseSchedulerBarrier, hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a); elsewhere
each warpgroup runs its own loop, tied to the others only by the K/V ring's barriers, and the trace
lists each phase for every warpgroup before the next.

**Tiles.** FA3's defaults for 16-bit inputs: $128\times128$ for causal $d\le128$, $128\times176$
non-causal, $192\times192$ (or $192\times128$ causal) for $d\le64$, $128\times80$ for $d=256$. Larger
$B_c$ means fewer rescales and fewer barrier round-trips, bounded by shared memory.

**FP8.** FA3 also runs both GEMMs in FP8 (e4m3) at twice the 16-bit throughput. That needs $V$ transposed
in shared memory (FP8 \`wgmma\` wants K-major operands) and a register permutation so the FP32 accumulator
of the first GEMM can feed the second. The shipped kernel scales with one descale per (batch, KV head)
for each of $Q$, $K$, $V$ (hopper/flash_api.cpp@0251105a); the block quantization and the Hadamard
rotation of $Q$ and $K$ are the paper's error experiment (FlashAttention-3, arXiv 2407.08608, §3.3
and §4.3), offered as switches that start off. Pick the dtype fp8e4m3 to step the FP8 path.`,
  steps: {
    skip: r`An empty tile under the block mask: no key of this $K/V$ block is visible to any row of the $Q$ tile, so the producer issues no TMA copy for it and no \`wgmma\` runs. Only partial blocks run the mask; full blocks go straight to the softmax.`,
    load: r`A TMA copy issued by the producer warp. It lands in a stage of a two-deep ring; the producer can be
at most two $K$ (and two $V$) blocks ahead of the consumers, because a stage is only reused after every
consumer warpgroup has released it. Bytes: $B_c\,d$ elements for $K_j$, $B_c\,d_v$ for $V_j$.`,
    qk: r`$S = Q_iK_j^\top\cdot\text{scale}$ for the warpgroup's rows, with softcap and ALiBi applied. Issued as
an asynchronous \`wgmma\` with both operands in shared memory; with overlap on it is issued *before*
the previous block's $PV$ GEMM.`,
    mask: r`Only the diagonal block (first in reverse order) and window edges carry masked entries; they are set
to $-\infty$ in registers before the max.`,
    rowmax: r`The running max per row: $m_{\text{new}} = \max(m_{\text{old}}, \max_j S_{rj})$ and the rescale
factor $e^{m_{\text{old}}-m_{\text{new}}}$ (one exponential per row).`,
    exp: r`$P = \exp(S - m_{\text{new}})$ in FP32 registers, converted to FP16/BF16 because the second GEMM takes
$P$ from registers as its A operand.`,
    rowsum: r`$\ell \leftarrow e^{m_{\text{old}}-m_{\text{new}}}\ell + \sum_j P_{rj}$, summed from the FP32 values.`,
    rescale: r`$O \leftarrow e^{m_{\text{old}}-m_{\text{new}}}\,O$. With overlap this waits for $O \mathrel{+}= P_{j-1}V_{j-1}$
to complete — the accumulator is only consistent once that GEMM has landed.`,
    pv: r`$O \mathrel{+}= P V_j$ with $P$ in registers (RS-wgmma) and $V_j$ in shared memory.`,
    normalize: r`One division per row after the last block: $O_i = O/\ell$; the log-sum-exp $L_i = m + \log\ell$
is kept for the backward pass. A sink logit $s$ joins the denominator here: $\ell \leftarrow \ell + e^{s-m}$
(with a max update).`,
    write: r`The epilogue writes $O_i$ (input type) and $L_i$ (FP32) back to HBM.`,
  },
  features: [
    {
      key: 'intraOverlap',
      default: 'true',
      text: r`Issue $S_{\text{next}}$ before $O \mathrel{+}= P_{\text{cur}}V_{j-1}$ and overlap the softmax with it.`,
    },
    {
      key: 'pingpong',
      default: 'true',
      text: 'Consumer warpgroups (64 rows each) take turns on the tensor cores where the kernel has the scheduler barrier (16-bit d ≤ 128, FP8 d ≥ 128). Off, or where the kernel has none: the warpgroups run side by side.',
    },
    {
      key: 'reverseKv',
      default: 'true',
      text: 'K/V blocks from the last to the first, as the kernel walks them (the causal diagonal block comes first). Off: first to last. The numbers differ only by rounding, except under FP8, where the order decides which P values flush to zero.',
    },
    {
      key: 'blockQuant',
      default: 'true',
      text: r`FP8 only. One scale per $B_r \times d$ tile of $Q$ and per $B_c \times d$ tile of $K$ and $V$; off: one scale per tensor, the baseline whose step size an outlier sets for everyone.`,
    },
    {
      key: 'incoherent',
      default: 'true',
      text: r`FP8 only. $Q$ and $K$ are multiplied by the same random Hadamard matrix $M = DH$ before quantizing; $QM(KM)^\top = QK^\top$, but an outlier channel is spread over the $d$ channels of its Hadamard block. When $d$ is not a power of two, $H$ is block-diagonal (blocks of the largest power of two dividing $d$).`,
    },
    {
      key: 'pScale',
      default: '256',
      text: r`FP8 only. $P$ is multiplied by this power of two before its e4m3 cast and divided after $P V$. The kernel uses 256 (it subtracts $m - 8$ in base 2); at 1 every $P \le 2^{-10}$ flushes to zero.`,
    },
    { key: 'seed', default: '0', text: r`FP8 only. Seed of the random $\pm 1$ diagonal $D$ of the Hadamard transform.` },
  ],
  support: [
    { variant: 'causal, sliding window', kernel: 'yes', flashscope: 'runs', note: 'blocks outside the mask are never loaded' },
    { variant: 'softcap', kernel: 'yes', flashscope: 'runs', note: 'applied to S before the max' },
    { variant: 'ALiBi', kernel: 'no', flashscope: 'runs', note: 'FA3 dropped ALiBi; FlashScope adds the bias to S as FA2 does' },
    {
      variant: 'attention sinks',
      kernel: 'partly',
      flashscope: 'runs',
      note: 'not in the original FA3 release; FlashScope adds the sink to the denominator at the end',
    },
    { variant: 'GQA / MQA, Nq ≠ Nk, d ≠ dv', kernel: 'yes', flashscope: 'runs', note: '' },
    {
      variant: 'fp32 inputs',
      kernel: 'no',
      flashscope: 'runs',
      note: 'FA3 takes fp16/bf16/fp8; FlashScope runs fp32 unrounded to show the schedule',
    },
    {
      variant: 'FP8 (e4m3; e5m2)',
      kernel: 'yes',
      flashscope: 'runs',
      note: 'dtype fp8e4m3 (e5m2 as a labelled what-if): one descale per (batch, KV head) as shipped, the paper’s per-tile scales and Hadamard rotation as switches, P cast to e4m3, O in bf16; no ALiBi or sinks; d = dv, or d 192 with dv 128',
    },
    { variant: 'd > 256', kernel: 'no', flashscope: 'rejected', note: 'no kernel instance' },
  ],
  content: {
    algorithm: 'fa3',
    title: 'FlashAttention-3 forward (Hopper)',
    source: 'Shah et al., "FlashAttention-3" (arXiv 2407.08608), Algorithms 1–2',
    lines: [
      { id: '', text: 'CTA = one Q tile; producer warp + consumer warpgroups (64 rows each)', indent: 0 },
      { id: 'fa3.loadQ', text: 'producer: TMA load Q_i', indent: 1, kinds: ['load'] },
      { id: '', text: 'for j = last … first:   (K/V blocks in reverse)', indent: 1 },
      {
        id: 'fa3.skip',
        text: 'producer and consumers: an empty (Q tile, K/V block) pair is left out of the loop',
        indent: 2,
        kinds: ['skip'],
      },
      { id: 'fa3.loadK', text: 'producer: wait for a free K stage; TMA load K_j', indent: 2 },
      { id: 'fa3.loadV', text: 'producer: wait for a free V stage; TMA load V_j', indent: 2 },
      { id: 'fa3.qk', text: 'consumer: S_next = Q_i K_jᵀ · scale   (wgmma, commit, no wait)', indent: 2, kinds: ['qk'] },
      { id: 'fa3.pv', text: 'consumer: O ← O + P_cur V_(j+1)   (wgmma, commit, no wait)', indent: 2, kinds: ['pv'] },
      { id: 'fa3.mask', text: 'wait for S_next; S_next ← −∞ where masked', indent: 2, kinds: ['mask'] },
      { id: 'fa3.rowmax', text: 'm_new = max(m, rowmax(S_next))', indent: 2, kinds: ['rowmax'] },
      { id: 'fa3.exp', text: 'P_next = exp(S_next − m_new)   (to fp16/bf16 in registers)', indent: 2, kinds: ['exp'] },
      { id: 'fa3.rowsum', text: 'ℓ = e^(m − m_new) · ℓ + rowsum(P_next)', indent: 2, kinds: ['rowsum'] },
      { id: 'fa3.rescale', text: 'wait for the PV wgmma; O ← e^(m − m_new) · O; release K/V stages', indent: 2, kinds: ['rescale'] },
      { id: '', text: 'after the loop: O ← O + P_cur V_first', indent: 1 },
      { id: 'fa3.normalize', text: 'O_i = O / ℓ;  L_i = m + log ℓ', indent: 1, kinds: ['normalize'] },
      { id: 'fa3.write', text: 'write O_i and L_i to HBM', indent: 1, kinds: ['write'] },
    ],
    explain: {
      'fa3.skip':
        'The block mask, built once before the loop, marks each K/V block empty, partial or full for this Q tile. An empty block holds no key any row of the tile may see: the producer never loads it and the consumers never multiply with it. A full block needs no mask at all; only a partial one sets hidden scores to −∞.',
      'fa3.loadQ':
        'The producer warp issues one TMA copy for the whole Q tile; the consumers wait on its barrier. The producer gives most of its registers to the consumers (setmaxnreg).',
      'fa3.loadK':
        'K blocks go into a two-stage ring. The producer runs ahead of the math by at most two blocks: a stage is reused only after every consumer warpgroup released it.',
      'fa3.loadV':
        'V blocks have their own two-stage ring. With the overlap on, V of a block is needed one iteration later than its K, so the producer issues K_j before V of the previous block.',
      'fa3.qk':
        "S = Q Kᵀ for this warpgroup's 64 rows, both operands in shared memory. Issued asynchronously; with the overlap it goes out before the previous block's P·V.",
      'fa3.pv':
        "O += P V with P in registers. With the overlap this is the previous block's P, multiplied while the softmax of the new S runs on the CUDA cores.",
      'fa3.mask': 'Only the diagonal block (visited first, since blocks go in reverse) and window edges need per-element masking.',
      'fa3.rowmax': 'The running max of each row; its change gives the rescale factor e^(m_old − m_new).',
      'fa3.exp': 'Exponentials in fp32, converted to the 16-bit type because P feeds the next wgmma from registers.',
      'fa3.rowsum': "The running sum, brought to the new max and increased by this block's row sums.",
      'fa3.rescale':
        'Once the in-flight P·V has landed, O is multiplied by e^(m_old − m_new). Doing it after the add gives the same numbers as FA2, which rescales before.',
      'fa3.normalize': 'One division by ℓ per row at the end; a sink logit joins ℓ here. LSE = m + log ℓ is kept for the backward pass.',
      'fa3.write': 'The epilogue writes O (input type) and LSE (fp32).',
    },
    corrections: {
      listing: 'Algorithm 1 of the FA3 paper',
      notes: [
        'The consumer\'s O update in Algorithm 1 of "FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision" (arXiv 2407.08608) rescales by diag(e^(m_old − m_i))^−1; the factor has no inverse, O ← diag(e^(m_old − m_i))·O + P̃ V_j, as hopper/softmax.h rescale_o does (Dao-AILab/flash-attention issue 1303; the authors confirmed it).',
      ],
    },
  },
};
