// FlashAttention-2 forward pass, as the step engine runs it (engine/algorithms/fa2/forward.ts).
import type { AlgorithmContent } from './types.ts';

export const fa2Content: AlgorithmContent = {
  algorithm: 'fa2',
  title: 'FlashAttention-2 forward',
  source: 'Dao, "FlashAttention-2", 2023, Algorithm 1',
  lines: [
    { id: '', text: 'split Q, O into Tr row blocks of Br; K, V into Tc column blocks of Bc', indent: 0 },
    { id: '', text: 'for i = 1 … Tr:            (outer loop, independent per Q block)', indent: 0 },
    { id: 'fa2.loadQ', text: 'load Q_i from HBM; on chip: O_i ← 0, ℓ_i ← 0, m_i ← −∞', indent: 1, kinds: ['load'] },
    { id: '', text: 'for j = 1 … Tc:          (inner loop over K/V blocks)', indent: 1 },
    { id: 'fa2.skip', text: 'if tile (i, j) is empty under the mask: skip it (nothing loaded)', indent: 2, kinds: ['skip'] },
    { id: 'fa2.loadKV', text: 'load K_j, V_j from HBM', indent: 2, kinds: ['load'] },
    { id: 'fa2.qk', text: 'S_ij = Q_i K_jᵀ · scale   (+ softcap, ALiBi)', indent: 2, kinds: ['qk'] },
    { id: 'fa2.mask', text: 'if tile (i, j) is partial: S_ij ← −∞ where the mask hides a key', indent: 2, kinds: ['mask'] },
    { id: 'fa2.rowmax', text: 'm_new = max(m_old, rowmax(S_ij))', indent: 2, kinds: ['rowmax'] },
    { id: 'fa2.exp', text: 'P_ij = exp(S_ij − m_new)', indent: 2, kinds: ['exp'] },
    { id: 'fa2.rowsum', text: 'ℓ_new = e^(m_old − m_new) · ℓ_old + rowsum(P_ij)', indent: 2, kinds: ['rowsum'] },
    { id: 'fa2.rescale', text: 'O_i ← diag(e^(m_old − m_new)) · O_i', indent: 2, kinds: ['rescale'] },
    { id: 'fa2.pv', text: 'O_i ← O_i + P_ij V_j', indent: 2, kinds: ['pv'] },
    { id: 'fa2.normalize', text: 'O_i ← diag(ℓ_i)⁻¹ O_i;  LSE_i = m_i + log ℓ_i', indent: 1, kinds: ['normalize'] },
    { id: 'fa2.write', text: 'write O_i and LSE_i to HBM', indent: 1, kinds: ['write'] },
  ],
  explain: {
    'fa2.loadQ':
      'The outer loop takes one block of Br query rows. Q blocks do not depend on each other, which is why FA2 can spread them over thread blocks even when batch × heads is small. The running max, sum and output start empty, on chip.',
    'fa2.skip':
      'The block mask, built once before the loops, marks each tile empty, partial or full. An empty tile has no key any query of the block may see, so its K and V are never loaded and its two matmuls never run: that is where a sparse mask saves time.',
    'fa2.loadKV': 'The next Bc keys and values come in from HBM. Every K/V block is read once per Q block.',
    'fa2.qk': 'One tile of scores: the Br query rows against the Bc keys, scaled by 1/√d. This tile never goes to HBM.',
    'fa2.mask':
      'Scores the mask hides become −∞, so they contribute e^−∞ = 0 to the softmax. Only partial tiles run the mask, on each of their entries; a full tile (every key visible) goes straight from S to the softmax with no mask work.',
    'fa2.rowmax':
      "The running max of each row grows to cover this tile. Subtracting it before exp keeps every exponent ≤ 0, so nothing overflows. The rescale below needs the max from before this block (the paper's m_i^(j−1)), kept here as m_old.",
    'fa2.exp': 'Unnormalized probabilities of this tile, against the new running max. They stay on chip.',
    'fa2.rowsum': "The running sum is brought to the new max (multiplied by e^(m_old − m_new)) and this tile's row sums are added.",
    'fa2.rescale':
      'The output so far was accumulated against the old max, so it is multiplied by the same factor e^(m_old − m_new). Where the max did not move the factor is exactly 1. FA2 defers the division by ℓ to the very end; FA1 divides here on every step.',
    'fa2.pv': "This tile's share of the output: O_i += P_ij V_j (V is not transposed), added to the rescaled accumulator.",
    'fa2.normalize':
      'After the last K/V block, one division by ℓ per row turns the accumulator into softmax(S)V. The log-sum-exp m + log ℓ is kept for the backward pass.',
    'fa2.write': 'The finished output rows and their LSE go to HBM: the only HBM writes of the whole Q block.',
  },
  corrections: {
    listing: 'Algorithm 1 of the FA2 paper',
    notes: [
      'Line 10 of Algorithm 1 ("FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", arXiv 2307.08691) multiplies O by diag(e^(m^(j−1) − m^(j)))^−1. The factor has no inverse: O ← diag(e^(m^(j−1) − m^(j))) O + P̃ V_j, which is what the kernels compute and what FlashScope runs (reported upstream as Dao-AILab/flash-attention issue 991).',
    ],
  },
};
