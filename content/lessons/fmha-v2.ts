import { md, type AlgorithmLesson } from './types.ts';

const r = md;

export const fmhaV2Lesson: AlgorithmLesson = {
  id: 'fmha-v2',
  title: 'TensorRT-LLM fmha_v2',
  hardware: 'Ada (SM89, e.g. RTX 4060): mma.sync tensor cores, LDGSTS asynchronous copies, ~100 KB shared memory',
  sources:
    'TensorRT-LLM, cpp/kernels/fmha_v2: the fmha_v2_flash_attention_fp16_128_128_S_qkv_16_sm89 kernel, built and run on an RTX 4060.',
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

**Packed QKV.** The kernel reads one tensor laid out $[B, S, 3, H, D]$: the Q, K and V rows of a
token sit next to each other. For one head, consecutive rows are $3HD$ elements apart. That changes the
addresses a tile load touches (and how well it coalesces), not the number of bytes: FlashScope counts
bytes per tensor exactly as for the other kernels. Packing needs $H_q = H_k$, $N_q = N_k$ and $d = d_v$;
other problems use the contiguous Q + KV layout.

**FP16 accumulation.** The modelled build defines \`HALF_ACCUMULATION_FOR_FLASH_ATTENTION\` and runs an
"fp16" kernel (not "fp16_fp32"): the tensor-core accumulators of both GEMMs are FP16. That is twice the
\`mma\` throughput on consumer GPUs but each running sum now carries $u = 2^{-11}$ relative error per
addition — and the unnormalized $O$ accumulator grows with $\ell$, so its absolute error grows too.
Switch \`fp16Accumulation\` on to see the error rise (it stays bounded: about $\lambda u\sqrt{\sum_k s_k^2}$
per running sum $s_k$).`,
  steps: {
    skip: r`An empty tile under the block mask: none of this $K/V$ block's keys is visible to the $Q$ tile, so no LDGSTS copy is issued and no HMMA runs for it.`,
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
    {
      key: 'fp16Accumulation',
      default: 'false',
      text: 'Accumulate both GEMMs in FP16 (fp16 inputs only), as the modelled sm89 build does.',
    },
  ],
  support: [
    {
      variant: 'causal, sliding window',
      kernel: 'yes',
      flashscope: 'runs',
      note: 'separate generated kernels (causal, sliding_or_chunked_causal)',
    },
    { variant: 'ALiBi, softcap', kernel: 'yes', flashscope: 'runs', note: '' },
    { variant: 'GQA / MQA, Nq ≠ Nk, d ≠ dv', kernel: 'yes', flashscope: 'runs', note: 'contiguous Q + KV or paged KV layout' },
    { variant: 'attention sinks', kernel: 'no', flashscope: 'runs', note: "the kernel has no sink input; added with FA2's math" },
    { variant: 'fp32 inputs', kernel: 'no', flashscope: 'runs', note: 'run unrounded to show the schedule' },
    { variant: 'fp16Accumulation with bf16/fp32', kernel: 'no', flashscope: 'rejected', note: 'no such HMMA' },
    { variant: 'd > 256', kernel: 'no', flashscope: 'rejected', note: '' },
  ],
  content: {
    algorithm: 'fmha-v2',
    title: 'TensorRT-LLM fmha_v2 flash attention (Ada)',
    source: 'TensorRT-LLM cpp/kernels/fmha_v2: fmha_v2_flash_attention_fp16_128_128_S_qkv_16_sm89',
    lines: [
      { id: '', text: 'grid: blockIdx.z = batch b, blockIdx.y = head h, blockIdx.x = Q tile i', indent: 0 },
      { id: 'fmha-v2.loadQ', text: 'LDGSTS Q_i (packed [B, S, 3, H, D] or contiguous Q)', indent: 1, kinds: ['load'] },
      { id: '', text: 'for each K/V block j:', indent: 1 },
      { id: 'fmha-v2.skip', text: 'skip K/V block j when the mask leaves no key of it visible to this Q tile', indent: 2, kinds: ['skip'] },
      { id: 'fmha-v2.loadKV', text: 'LDGSTS K_(j+1), V_(j+1) into the other buffer (double buffering)', indent: 2, kinds: ['load'] },
      { id: '', text: 'each warp w = 0…3 on its rows Q_(i,w):', indent: 2 },
      { id: 'fmha-v2.qk', text: 'S = Q_(i,w) K_jᵀ · scale_bmm1', indent: 3, kinds: ['qk'] },
      { id: 'fmha-v2.mask', text: 'S ← −∞ where causal / sliding window hides a key', indent: 3, kinds: ['mask'] },
      { id: 'fmha-v2.rowmax', text: 'reduce<Max>: m_new = max(global_max, rowmax(S))', indent: 3, kinds: ['rowmax'] },
      { id: 'fmha-v2.exp', text: 'apply_exp: P = exp(S − m_new)', indent: 3, kinds: ['exp'] },
      { id: 'fmha-v2.rowsum', text: 'reduce<Sum>: global_sum = e^(m − m_new) · global_sum + rowsum(P)', indent: 3, kinds: ['rowsum'] },
      { id: 'fmha-v2.rescale', text: 'acc_o_normalizer.update: acc_o ← e^(m − m_new) · acc_o', indent: 3, kinds: ['rescale'] },
      { id: 'fmha-v2.pv', text: 'acc_o ← acc_o + P V_j', indent: 3, kinds: ['pv'] },
      { id: 'fmha-v2.normalize', text: 'final_update: O = acc_o / global_sum', indent: 1, kinds: ['normalize'] },
      { id: 'fmha-v2.write', text: 'registers → shared memory → O_i in HBM', indent: 1, kinds: ['write'] },
    ],
    explain: {
      'fmha-v2.skip':
        'The block mask marks each K/V block empty, partial or full for this Q tile. An empty block is never copied into the double buffer and never multiplied; a full block runs without any mask; only a partial block sets hidden scores to −∞.',
      'fmha-v2.loadQ':
        "One CTA per (batch, head, Q tile), exactly the kernel's grid. Q rows of one head are 3·H·D elements apart in the packed layout; the byte count is the same.",
      'fmha-v2.loadKV':
        'The copy of the next K/V block goes into the second buffer before any warp starts on this one, so loading hides behind the math.',
      'fmha-v2.qk':
        'Each of the 4 warps multiplies its own quarter of the Q rows by all keys of the block. With fp16 accumulation every partial sum is rounded to fp16.',
      'fmha-v2.mask': 'Generated causal and sliding-window kernels mask inside edge blocks and skip blocks outside.',
      'fmha-v2.rowmax':
        'Row maxima are reduced with shuffles among the threads of a row — never across warps, since every warp owns whole rows.',
      'fmha-v2.exp': 'Exponentials in fp32, converted to fp16 for the second mma.',
      'fmha-v2.rowsum': 'The running sum follows the running max.',
      'fmha-v2.rescale': 'The normalizer brings the accumulator to the new max (rounded to fp16 when the accumulator is fp16).',
      'fmha-v2.pv':
        'O += P V with fp32 accumulators, or fp16 ones with fp16Accumulation: then every add is rounded and the error grows with the row sum.',
      'fmha-v2.normalize': 'One division per row at the end of the kv loop.',
      'fmha-v2.write': 'The CTA writes its O tile (and LSE) through shared memory.',
    },
    corrections: null,
  },
};
