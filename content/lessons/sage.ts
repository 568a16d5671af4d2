import { md, type AlgorithmLesson } from './types.ts';

const r = md;

export const sageLesson: AlgorithmLesson = {
  id: 'sage',
  title: 'SageAttention (INT8 Q·Kᵀ)',
  hardware: 'Ampere / Ada / Hopper: INT8 mma for Q·Kᵀ; FP16 mma (v1) or FP8 e4m3 mma on SM89/SM90 (v2) for P·V',
  sources:
    '"SageAttention: Accurate 8-Bit Attention for Plug-and-play Inference Acceleration" (arXiv 2410.02367) and "SageAttention2" (arXiv 2411.10958) papers and the thu-ml/SageAttention kernels (v1 Triton, v2 SM89 CUDA).',
  intro: r`SageAttention is FA2's online softmax with the first GEMM in **INT8**. INT8 tensor cores run
twice as fast as FP16 ones and read half the bytes, and $QK^\top$ is the GEMM that tolerates it: its
result goes through a softmax, which forgives small relative errors in the logits. The second GEMM
stays in FP16 (version 1) or moves to FP8 e4m3 (version 2).

**Quantizing Q and K.** Before the kernel runs, $Q$ and $K$ become INT8 codes with one scale per block:
$$\delta = \frac{\max|x|}{127}, \qquad \hat{x} = \operatorname{round}(x/\delta) \in [-127, 127]$$
per $B_r$ rows of $Q$ (version 2: per warp, 32 rows of the 128-row tile) and per $B_c$ keys of $K$.
The block's largest entry lands on $\pm127$; every other entry loses what lies between two steps.

**INT32 dot products.** $\hat{Q}_i\hat{K}_j^\top$ is a sum of $d$ products of integers, exact in the INT32
accumulator. One multiply turns it back into a logit:
$$S_{ij} = \big(\hat{Q}_i \hat{K}_j^\top\big)\,\delta_Q\,\delta_K .$$
Version 1 multiplies $Q$ by $\tau\log_2 e$ before quantizing, so $\delta_Q$ carries the softmax scale and
$S$ is already in log2 units; version 2 multiplies $\tau\log_2 e$ into the dequantization factor. Either
way the softmax runs with $2^x$.

**Smoothing K.** Keys often share a large per-channel offset. One offset channel sets $\delta_K$ for the
whole block and the varying part of $K$ is left with a handful of steps. SageAttention subtracts the mean
over the tokens, $K' = K - \bar{K}$. Every logit of a query row moves by the same $q\cdot\bar{K}\,\tau$, and a
softmax does not see a shift that is common to a row:
$$\operatorname{softmax}(qK'^\top\tau) = \operatorname{softmax}(qK^\top\tau).$$
Only the LSE changes; the wrapper adds $q\cdot\bar{K}\,\tau$ back.

**P·V.** Version 1 casts $P$ to FP16 and multiplies FP16 $V$ with an FP16 accumulator inside each block
(\`tl.dot(..., out_dtype=float16)\`), adding the block's result to the FP32 $O$ once. Version 2 computes
$P = 2^{S - m + 8.807}$, so that $P$ fills e4m3's range up to $2^{8.807}\approx 448$, casts it to e4m3, and
multiplies e4m3 $V$ quantized **per channel** ($\delta_{V,c} = \max_j |V_{jc}|/448$); the channel scales
and the 448 are divided out at the end.`,
  steps: {
    skip: r`An empty tile under the block mask: no row of the $Q$ tile may see a key of this block, so its INT8 $K$ and its $V$ are not loaded and neither product runs.`,
    load: r`An INT8 tile of $Q$ or $K$ (one byte per element) with its scale $\delta$, or a tile of $V$ (FP16 in v1,
e4m3 in v2). The quantization itself is a separate kernel before this one and is not counted.`,
    qk: r`$S = (\hat{Q}\hat{K}^\top)\,\delta_Q\delta_K$: an exact integer sum of code products, dequantized with one
FP32 multiply per factor. The step shows $\delta_Q$ and $\delta_K$.`,
    mask: r`Causal (and window) entries set to $-\infty$ after the dequantization, as in FA2.`,
    rowmax: r`$m_{\text{new}} = \max(m_{\text{old}}, \max_j S_{rj})$ in log2 units; the rescale factor is $2^{m_{\text{old}}-m_{\text{new}}}$.`,
    exp: r`$P = 2^{S-m}$ in FP32, then cast for the second GEMM: to FP16 (v1), or scaled by $2^{8.807}$ and cast to
e4m3 (v2). A value at or below half the format's smallest subnormal flushes to zero; the step lists them.`,
    rowsum: r`$\ell \leftarrow 2^{m_{\text{old}}-m_{\text{new}}}\,\ell + \sum_j P_{rj}$ from the FP32 $P$, before the cast.`,
    rescale: r`$O \leftarrow 2^{m_{\text{old}}-m_{\text{new}}}\,O$ before the block's $PV$ is added.`,
    pv: r`v1: $O \mathrel{+}= \operatorname{fp16}(PV_j)$, the block's product accumulated in FP16, then added to FP32 $O$.
v2: $O \mathrel{+}= \tilde{P}\,\hat{V}_j$ with e4m3 $\tilde{P}$ and per-channel e4m3 $\hat{V}$, accumulated in FP32.`,
    normalize: r`$O / \ell$ once per row; LSE $= (m + \log_2\ell)\ln 2$, plus $q\cdot\bar{K}\,\tau$ when $K$ was smoothed.`,
    write: r`$O$ in the input dtype (FP16 or BF16) and the LSE.`,
  },
  features: [
    {
      key: 'version',
      default: '1',
      text: r`1: $P$ and $V$ in FP16, each block's $PV$ accumulated in FP16 (the Triton kernel). 2: $P$ scaled by $2^{8.807}$ and $V$ per channel in FP8 e4m3, accumulated in FP32 (the SM89 kernel).`,
    },
    {
      key: 'smoothK',
      default: 'true',
      text: r`Subtract $\bar{K}$, the mean of $K$ over the tokens, before quantizing. The softmax is unchanged; $\delta_K$ shrinks to the spread of $K$ around its mean.`,
    },
    {
      key: 'qPerWarp',
      default: 'true',
      text: r`Version 2 only. One $\delta_Q$ per warp (32 rows of the 128-row tile) instead of per tile; each warp's slice is stepped as its own unit.`,
    },
  ],
  support: [
    { variant: 'causal', kernel: 'yes', flashscope: 'runs', note: 'blocks above the diagonal are skipped' },
    { variant: 'GQA / MQA, Nq ≠ Nk', kernel: 'yes', flashscope: 'runs', note: 'K is smoothed and quantized per K/V head' },
    { variant: 'sliding window', kernel: 'no', flashscope: 'runs', note: 'the shared mask step handles it' },
    { variant: 'ALiBi, softcap, attention sinks', kernel: 'no', flashscope: 'rejected', note: '' },
    { variant: 'd ≠ dv, d > 128', kernel: 'no', flashscope: 'rejected', note: 'one head dim for Q, K and V, up to 128' },
    { variant: 'fp32 inputs', kernel: 'no', flashscope: 'runs', note: 'quantized the same way; v1 keeps V in fp32' },
    { variant: 'FP8 dtypes as inputs', kernel: 'no', flashscope: 'rejected', note: 'sage chooses its own precisions' },
    { variant: 'backward', kernel: 'no', flashscope: 'rejected', note: 'SageAttention is an inference kernel' },
  ],
  content: {
    algorithm: 'sage',
    title: 'SageAttention (INT8 Q·Kᵀ, FP16 or FP8 P·V)',
    source: 'thu-ml/SageAttention: v1 Triton kernel (128 × 64 tiles), v2 SM89 CUDA kernel (CTA 128 × 64, 4 warps of 32 rows)',
    lines: [
      { id: '', text: 'before the kernel: K ← K − mean(K) (smoothK); Q̂, δ_Q and K̂, δ_K per block in INT8', indent: 0 },
      { id: '', text: 'one CTA per Q tile i', indent: 0 },
      { id: 'sage.loadQ', text: 'load Q̂_i and δ_Q (v2: one per 32-row warp slice)', indent: 1, kinds: ['load'] },
      { id: '', text: 'for j = 0 … last visible block:', indent: 1 },
      { id: 'sage.skip', text: 'skip K/V block j when the mask leaves no key of it visible', indent: 2, kinds: ['skip'] },
      { id: 'sage.loadK', text: 'load K̂_j and δ_K', indent: 2 },
      { id: 'sage.loadV', text: 'load V_j (fp16 in v1, e4m3 in v2)', indent: 2 },
      { id: 'sage.qk', text: 'S = (Q̂_i K̂_jᵀ in INT32) · δ_Q · δ_K   (log2 units)', indent: 2, kinds: ['qk'] },
      { id: 'sage.mask', text: 'diagonal block: S ← −∞ where masked', indent: 2, kinds: ['mask'] },
      { id: 'sage.rowmax', text: 'm_new = max(m, rowmax(S))', indent: 2, kinds: ['rowmax'] },
      { id: 'sage.exp', text: 'P = 2^(S − m_new); cast: fp16 (v1) or e4m3 of P · 2^8.807 (v2)', indent: 2, kinds: ['exp'] },
      { id: 'sage.rowsum', text: 'ℓ ← 2^(m − m_new) · ℓ + rowsum(P)', indent: 2, kinds: ['rowsum'] },
      { id: 'sage.rescale', text: 'O ← 2^(m − m_new) · O', indent: 2, kinds: ['rescale'] },
      { id: 'sage.pv', text: 'O ← O + P V_j   (v1: fp16 accumulator per block; v2: e4m3 × e4m3, fp32)', indent: 2, kinds: ['pv'] },
      { id: 'sage.normalize', text: 'O = O / ℓ;  LSE = (m + log2 ℓ)·ln 2 + q·mean(K)·τ', indent: 1, kinds: ['normalize'] },
      { id: 'sage.write', text: 'write O_i (fp16/bf16) and LSE', indent: 1, kinds: ['write'] },
    ],
    explain: {
      'sage.skip':
        "The block mask marks each K/V block empty, partial or full for this Q tile. An empty block's quantized K and V are never loaded and neither product runs; a full block runs without a mask; only a partial block sets hidden scores to −∞.",
      'sage.loadQ': "The Q tile arrives as INT8 codes, one byte each, with the scale of its block (in v2, of each warp's 32 rows).",
      'sage.loadK': 'K was smoothed and quantized before the kernel: the block carries its codes and one scale.',
      'sage.loadV': 'V stays 16-bit in v1; in v2 it is FP8 e4m3 with one scale per channel, applied at the end.',
      'sage.qk':
        'The INT8 tensor cores sum code products exactly in INT32; one multiply by the two scales gives the logit, in log2 units because τ·log2 e went into the scale.',
      'sage.mask': 'Masked entries become −∞ after the dequantization, as in FA2.',
      'sage.rowmax': 'The running max per row, in log2 units.',
      'sage.exp':
        "P in fp32, then the cast the second GEMM needs. In v2 P is scaled to e4m3's range first; values that still fall under its smallest subnormal become 0.",
      'sage.rowsum': 'The row sum uses the fp32 P, before the cast.',
      'sage.rescale': "The accumulator is rescaled before the block's P·V is added.",
      'sage.pv':
        "v1 accumulates one block's P·V in fp16 and adds it to the fp32 O; v2 multiplies e4m3 P by e4m3 V and accumulates in fp32.",
      'sage.normalize':
        'One division per row. Smoothing moved every logit of the row by q·mean(K)·τ; the LSE gets it back, O never needed it.',
      'sage.write': 'O is written in the input dtype.',
    },
    corrections: null,
  },
};
