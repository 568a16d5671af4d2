import { md, type AlgorithmLesson } from './types.ts';

const r = md;

export const fmhaV2Lesson: AlgorithmLesson = {
  id: 'fmha-v2',
  title: 'TensorRT-LLM fmha_v2',
  hardware: 'Ada (SM89, e.g. RTX 4060): mma.sync tensor cores, LDGSTS asynchronous copies, ~100 KB shared memory',
  sources: 'Seed 001 (building and debugging fmha_v2_flash_attention_fp16_128_128_S_qkv_16_sm89).',
  intro: r`fmha_v2 is the fused multi-head attention of TensorRT-LLM for inference. Its flash-attention
kernels are generated per configuration; the name spells the configuration out —
\`fp16_128_128_S_qkv_16_sm89\`: FP16 data, a Q step of 128 rows, a K/V step of 128 keys, packed QKV
input, head dim 16, compiled for SM89.

**Grid.** \`blockIdx.z\` is the batch, \`blockIdx.y\` the head, \`blockIdx.x\` the Q tile: one CTA per
(batch, head, Q tile). Each CTA walks all K/V blocks of its head (the "kv loop").

**Warps.** Four warps split the Q rows ($w_m = 4$, $w_n = 1$): warp $w$ owns rows
$[r_0 + wB_r/4,\ r_0 + (w+1)B_r/4)$ and every key of the block. Since softmax is per row, a warp never
needs another warp's numbers — the row max and sum are reduced with shuffles among the 4 threads that
share a row, never through shared memory. FlashScope shows each warp's steps separately.

**Double buffering.** K and V live in two shared-memory buffers. While the warps compute on block $j$, the
LDGSTS copy of block $j+1$ fills the other buffer (\`move_to_next_write_buffer\`); \`ldgdepbar\` is the
fence that makes the math wait for the copy it needs.

**Softmax normalizer.** Per row: \`global_max\`, \`global_sum\`; each block computes its max, $e^{s-m}$ and
row sums, and the normalizer rescales \`acc_o\` by $e^{m_{\text{old}}-m_{\text{new}}}$; \`final_update\`
divides by the sum once:
$$O = \frac{\sum_j e^{s_j-m}v_j}{\sum_j e^{s_j-m}}.$$

**Packed QKV.** The seed's kernel reads one tensor laid out $[B, S, 3, H, D]$: the Q, K and V rows of a
token sit next to each other. For one head, consecutive rows are $3HD$ elements apart. That changes the
addresses a tile load touches (and how well it coalesces), not the number of bytes: FlashScope counts
bytes per tensor exactly as for the other kernels. Packing needs $H_q = H_k$, $N_q = N_k$ and $d = d_v$;
other problems use the contiguous Q + KV layout.

**FP16 accumulation.** The seed builds with \`HALF_ACCUMULATION_FOR_FLASH_ATTENTION\` and runs an
"fp16" kernel (not "fp16_fp32"): the tensor-core accumulators of both GEMMs are FP16. That is twice the
\`mma\` throughput on consumer GPUs but each running sum now carries $u = 2^{-11}$ relative error per
addition — and the unnormalized $O$ accumulator grows with $\ell$, so its absolute error grows too.
Switch \`fp16Accumulation\` on to see the error rise (it stays bounded: about $\lambda u\sqrt{\sum_k s_k^2}$
per running sum $s_k$).`,
  lines: {
    'fmha-v2.loadQ': { indent: 1, text: r`CTA (z = b, y = h, x = i): LDGSTS $Q_i$ into shared memory` },
    'fmha-v2.loadKV': { indent: 2, text: r`LDGSTS $K_{j+1}, V_{j+1}$ into the other buffer (double buffering)` },
    'fmha-v2.qk': { indent: 3, text: r`warp $w$: $S = Q_{i,w}K_j^\top$ (mma.sync, scale $\texttt{bmm1}$)` },
    'fmha-v2.mask': { indent: 3, text: r`warp $w$: apply the causal / sliding-window mask` },
    'fmha-v2.rowmax': { indent: 3, text: r`warp $w$: \texttt{reduce<Max>}: $m_{\text{new}} = \max(m, \operatorname{rowmax} S)$` },
    'fmha-v2.exp': { indent: 3, text: r`warp $w$: \texttt{apply\_exp}: $P = e^{S - m_{\text{new}}}$` },
    'fmha-v2.rowsum': { indent: 3, text: r`warp $w$: \texttt{reduce<Sum>}: $\ell = e^{m-m_{\text{new}}}\ell + \operatorname{rowsum} P$` },
    'fmha-v2.rescale': { indent: 3, text: r`warp $w$: normalizer update: $O \mathrel{*}= e^{m-m_{\text{new}}}$` },
    'fmha-v2.pv': { indent: 3, text: r`warp $w$: $O \mathrel{+}= PV_j$ (mma.sync)` },
    'fmha-v2.normalize': { indent: 1, text: r`warp $w$: \texttt{final\_update}: $O = O/\ell$` },
    'fmha-v2.write': { indent: 1, text: r`CTA: registers → shared memory → $O_i$ in HBM` },
  },
  steps: {
    load: r`LDGSTS (\`cp.async\`) copies with per-row predicates, so rows past the sequence end cost no bytes. K and
V of block $j+1$ are requested before the warps start on block $j$.`,
    qk: r`Each warp multiplies its own rows of $Q$ by all of $K_j$. With FP16 accumulation every partial sum of
the dot product is rounded to FP16.`,
    mask: r`Causal and sliding-window kernels mask inside the diagonal / window-edge blocks; blocks wholly
outside are not visited.`,
    rowmax: r`Row max of the block, combined with the running max (shuffles within the 4 threads of a row).`,
    exp: r`$P = e^{S-m}$ in FP32, converted to FP16 as the A operand of the second \`mma\`.`,
    rowsum: r`Row sums of $P$ folded into the running sum with the rescale factor.`,
    rescale: r`\`acc_o_normalizer.update\` multiplies the accumulator rows by $e^{m_{\text{old}}-m_{\text{new}}}$ (rounded
to FP16 when the accumulator is FP16).`,
    pv: r`$O \mathrel{+}= PV_j$: FP32 accumulators by default, FP16 with \`fp16Accumulation\`.`,
    normalize: r`\`final_update\` divides each row by its sum once; a sink logit joins the sum first.`,
    write: r`Output staged through shared memory for wide, coalesced stores.`,
  },
  features: [
    { key: 'fp16Accumulation', default: 'false', text: 'Accumulate both GEMMs in FP16 (fp16 inputs only), as the seed\'s build does.' },
  ],
  support: [
    { variant: 'causal, sliding window', kernel: 'yes', flashscope: 'runs', note: 'separate generated kernels (causal, sliding_or_chunked_causal)' },
    { variant: 'ALiBi, softcap', kernel: 'yes', flashscope: 'runs', note: '' },
    { variant: 'GQA / MQA, Nq ≠ Nk, d ≠ dv', kernel: 'yes', flashscope: 'runs', note: 'contiguous Q + KV or paged KV layout' },
    { variant: 'attention sinks', kernel: 'partly', flashscope: 'runs', note: 'not in the seed\'s build; FA2\'s math' },
    { variant: 'fp32 inputs', kernel: 'no', flashscope: 'runs', note: 'run unrounded to show the schedule' },
    { variant: 'fp16Accumulation with bf16/fp32', kernel: 'no', flashscope: 'rejected', note: 'no such HMMA' },
    { variant: 'd > 256', kernel: 'no', flashscope: 'rejected', note: '' },
  ],
  corrections: [
    r`Seed 001 lists TMA among the features fmha_v2 uses on SM89; Ada has no TMA — its flash kernels load with LDGSTS (\`cp.async\`), which is what FlashScope models. TMA and warp specialization belong to the SM90 kernels.`,
    r`Seed 001 writes the ALiBi bias as $-\alpha(i-j)$; FlashScope uses $-\alpha\,|i-j|$ with bottom-right alignment, which equals it under a causal mask.`,
  ],
};
