import { md, type AlgorithmLesson } from './types.ts';

const r = md;

export const flashDecodingLesson: AlgorithmLesson = {
  id: 'flash-decoding',
  title: 'Flash-decoding',
  hardware: 'Any GPU; the split count targets its SM count',
  sources:
    '"Flash-Decoding for long-context inference" (Dao, Haziza, Massa, Sizov, crfm.stanford.edu/2023/10/12/flashdecoding.html); the FlashAttention-2 split-KV kernels and their num_splits heuristic.',
  intro: r`While generating text, each step attends one new query ($N_q = 1$, or a few with speculative
decoding) to a long cache of keys and values. FA2 parallelizes over batch, heads and Q tiles — here that
is only $B\cdot H$ CTAs, often far fewer than the GPU's SMs, and each CTA walks the whole cache alone.

**Split the keys.** Flash-decoding adds a parallel dimension over the K/V sequence: the cache is cut into
$S$ splits of whole blocks, and each (batch, head, Q tile, split) is its own CTA running FA2's loop on its
range. A split ends with its own normalized partial output and log-sum-exp,
$$O_s = \frac{\sum_{j\in s} e^{x_j - m_s}v_j}{\ell_s},\qquad L_s = m_s + \log \ell_s ,$$
both written to HBM in FP32 (\`Opartial\`, \`LSEpartial\`).

**Combine.** A second, small kernel merges the splits of each row. Because $e^{L_s}$ is exactly split
$s$'s share of the softmax denominator,
$$L = \log\sum_s e^{L_s},\qquad O = \sum_s e^{L_s - L}\,O_s .$$
It is computed against $\max_s L_s$ so no exponential overflows, and empty splits ($L_s = -\infty$)
contribute nothing. An attention sink enters here, once, as one more term $e^{\text{sink}}$ of the sum.

**How many splits.** FA2's heuristic: if $B\cdot H\cdot\lceil N_q/64\rceil$ CTAs already fill 80% of the
SMs, do not split. Otherwise try $s = 1,\dots,\min(128, \#\text{SMs}, \#\text{blocks})$, skipping values
that give the same blocks-per-split as $s-1$; with $w = \text{CTAs}\cdot s/\#\text{SMs}$ waves, the
efficiency is $w/\lceil w\rceil$; pick the smallest $s$ within 85% of the best. More splits mean more
partial traffic and a bigger combine, so the heuristic stops as soon as the waves are nearly full.

**Traffic.** Each split re-reads the Q tile (tiny for decoding) and writes $N_q(d_v + 1)$ FP32 values;
K and V are still read exactly once in total.`,
  steps: {
    skip: r`An empty tile under the block mask: no query row of this split may see a key of the block, so it is neither loaded nor multiplied.`,
    load: r`Each split loads its own copy of the Q tile and only its range of K/V blocks.`,
    qk: r`FA2's inner loop, restricted to the split's keys.`,
    mask: r`Causal and window masks apply with absolute key positions; a split entirely outside the mask does no
work and reports $L_s = -\infty$.`,
    rowmax: r`Running max within the split only — splits never see each other's maxima.`,
    exp: r`$P = e^{S - m}$ against the split's running max.`,
    rowsum: r`Running sum within the split.`,
    rescale: r`Within a split, as in FA2.`,
    pv: r`Within a split, as in FA2.`,
    normalize: r`Each split divides by its own $\ell_s$, so the partials are ordinary attention outputs over their
key ranges; with one split this is the final output (sink included).`,
    write: r`Partials go out in FP32 regardless of the input type, so the combine loses no precision.`,
    combine: r`Per row: $M = \max_s L_s$, $L = M + \log\sum_s e^{L_s - M}$, $O = \sum_s e^{L_s - L}O_s$.
The weights $e^{L_s-L}$ are the fractions of the softmax mass that each split holds; they sum to 1 (less
the sink's share).`,
  },
  features: [
    { key: 'splits', default: '0 (heuristic)', text: 'Number of K/V splits; 0 chooses it with the occupancy heuristic.' },
    { key: 'smCount', default: '108', text: 'SMs the heuristic fills (108 = A100; 132 = H100 SXM).' },
    {
      key: 'blocksPerSplit',
      default: '0 (from splits)',
      text: 'K/V blocks per split, fixed instead of a split count: a batch of sequences shares one split length, rounded up to whole pages on a paged cache so no page is walked by two splits.',
    },
  ],
  support: [
    { variant: 'Nq ≥ 1 (decoding and prefill)', kernel: 'yes', flashscope: 'runs', note: '' },
    { variant: 'causal, window, ALiBi, softcap', kernel: 'yes', flashscope: 'runs', note: '' },
    { variant: 'sinks', kernel: 'yes', flashscope: 'runs', note: 'added once in the combine' },
    { variant: 'GQA / MQA', kernel: 'yes', flashscope: 'runs', note: '' },
    { variant: 'fp32, fp16, bf16', kernel: 'yes', flashscope: 'runs', note: 'partials always FP32' },
  ],
  content: {
    algorithm: 'flash-decoding',
    title: 'Flash-decoding (split-KV + combine)',
    source: 'Flash-Decoding (crfm.stanford.edu, 2023-10-12); FlashAttention-2 split-KV kernels and their split heuristic',
    lines: [
      { id: '', text: 'kernel 1: for each (Q tile i, split s, batch·head):', indent: 0 },
      { id: 'flash-decoding.loadQ', text: 'load Q_i', indent: 1, kinds: ['load'] },
      { id: '', text: 'for j in the blocks of split s:', indent: 1 },
      {
        id: 'flash-decoding.skip',
        text: "skip K/V block j when the mask hides all of it from this split's queries",
        indent: 2,
        kinds: ['skip'],
      },
      { id: 'flash-decoding.loadKV', text: 'load K_j, V_j', indent: 2, kinds: ['load'] },
      { id: 'flash-decoding.qk', text: 'S = Q_i K_jᵀ · scale', indent: 2, kinds: ['qk'] },
      { id: 'flash-decoding.mask', text: 'S ← −∞ where masked', indent: 2, kinds: ['mask'] },
      { id: 'flash-decoding.rowmax', text: 'm_new = max(m, rowmax(S))', indent: 2, kinds: ['rowmax'] },
      { id: 'flash-decoding.exp', text: 'P = exp(S − m_new)', indent: 2, kinds: ['exp'] },
      { id: 'flash-decoding.rowsum', text: 'ℓ = e^(m − m_new) · ℓ + rowsum(P)', indent: 2, kinds: ['rowsum'] },
      { id: 'flash-decoding.rescale', text: 'O ← e^(m − m_new) · O', indent: 2, kinds: ['rescale'] },
      { id: 'flash-decoding.pv', text: 'O ← O + P V_j', indent: 2, kinds: ['pv'] },
      { id: 'flash-decoding.normalize', text: 'O_s = O / ℓ_s;  LSE_s = m + log ℓ_s', indent: 1, kinds: ['normalize'] },
      { id: 'flash-decoding.writePartial', text: 'write O_s, LSE_s (fp32) to HBM', indent: 1 },
      { id: '', text: 'kernel 2: for each Q tile i:', indent: 0 },
      { id: 'flash-decoding.combine', text: 'LSE = log Σ_s e^(LSE_s);  O = Σ_s e^(LSE_s − LSE) · O_s', indent: 1, kinds: ['combine'] },
      { id: 'flash-decoding.write', text: 'write O and LSE', indent: 1, kinds: ['write'] },
    ],
    explain: {
      'flash-decoding.skip':
        'The block mask marks each K/V block of the split empty, partial or full. An empty block is never loaded or multiplied; a full block runs without a mask; only a partial block sets hidden scores to −∞.',
      'flash-decoding.loadQ': 'Every split loads its own copy of the (small) Q tile.',
      'flash-decoding.loadKV':
        'A split reads only its own range of K/V blocks, so the cache is read once in total but by many CTAs at once.',
      'flash-decoding.qk': "FA2's loop, restricted to this split's keys.",
      'flash-decoding.mask': 'Masks use absolute key positions; a split that the mask hides entirely does no work.',
      'flash-decoding.rowmax': 'The running max of this split only: splits never see each other.',
      'flash-decoding.exp': "Exponentials against the split's running max.",
      'flash-decoding.rowsum': "The split's running sum.",
      'flash-decoding.rescale': 'Rescaling inside a split, exactly as in FA2.',
      'flash-decoding.pv': "The split's share of the output.",
      'flash-decoding.normalize':
        'Each split normalizes by its own sum, so its partial is an ordinary attention output over its keys; e^LSE_s is its share of the full denominator.',
      'flash-decoding.writePartial': 'Partials are written in fp32 whatever the input type, so the combine loses nothing.',
      'flash-decoding.combine':
        'The combine weights each partial by its share of the softmax mass, computed against the largest LSE_s so nothing overflows. A sink joins the sum here, once.',
      'flash-decoding.write': 'The merged output and LSE, in the output type.',
    },
    corrections: null,
  },
};
