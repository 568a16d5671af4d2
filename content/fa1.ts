// FlashAttention (FA1) forward pass, as the step engine runs it (engine/algorithms/fa1/forward.ts).
import type { AlgorithmContent } from './types.ts';

export const fa1Content: AlgorithmContent = {
  algorithm: 'fa1',
  title: 'FlashAttention (FA1) forward',
  source: 'Dao et al., "FlashAttention", 2022, Algorithm 1',
  lines: [
    { id: '', text: 'Bc = ⌈M / 4d⌉, Br = min(⌈M / 4d⌉, d)', indent: 0 },
    { id: 'fa1.init', text: 'in HBM: O ← 0, ℓ ← 0, m ← −∞', indent: 0, kinds: ['write'] },
    { id: '', text: 'for j = 1 … Tc:            (outer loop over K/V blocks)', indent: 0 },
    { id: 'fa1.loadKV', text: 'load K_j, V_j from HBM   (unless every tile (·, j) is empty)', indent: 1, kinds: ['load'] },
    { id: '', text: 'for i = 1 … Tr:          (inner loop over Q blocks)', indent: 1 },
    { id: 'fa1.skip', text: 'if tile (i, j) is empty under the mask: skip it', indent: 2, kinds: ['skip'] },
    { id: 'fa1.loadQOlm', text: 'load Q_i, O_i, ℓ_i, m_i from HBM', indent: 2, kinds: ['load'] },
    { id: 'fa1.qk', text: 'S_ij = Q_i K_jᵀ · scale', indent: 2, kinds: ['qk'] },
    { id: 'fa1.mask', text: 'if tile (i, j) is partial: S_ij ← −∞ where masked', indent: 2, kinds: ['mask'] },
    { id: 'fa1.rowmax', text: 'm̃_ij = rowmax(S_ij);  m_new = max(m_i, m̃_ij)', indent: 2, kinds: ['rowmax'] },
    { id: 'fa1.exp', text: 'P̃_ij = exp(S_ij − m̃_ij);  ℓ̃_ij = rowsum(P̃_ij)', indent: 2, kinds: ['exp'] },
    { id: 'fa1.rowsum', text: 'ℓ_new = e^(m_i − m_new) ℓ_i + e^(m̃_ij − m_new) ℓ̃_ij', indent: 2, kinds: ['rowsum'] },
    { id: 'fa1.rescale', text: 'O_i ← diag(ℓ_new)⁻¹ diag(ℓ_i) e^(m_i − m_new) O_i', indent: 2, kinds: ['rescale'] },
    { id: 'fa1.pv', text: 'O_i ← O_i + diag(ℓ_new)⁻¹ e^(m̃_ij − m_new) P̃_ij V_j', indent: 2, kinds: ['pv'] },
    { id: 'fa1.write', text: 'write O_i, ℓ_i ← ℓ_new, m_i ← m_new to HBM', indent: 2, kinds: ['write'] },
  ],
  explain: {
    'fa1.init':
      'The output and both softmax statistics live in HBM for the whole run: each Q block will be read and rewritten once per K/V block.',
    'fa1.loadKV':
      'The outer loop takes one K/V block and keeps it on chip while every Q block passes by. A K/V block that no query may see under the mask is never loaded.',
    'fa1.skip':
      'The block mask, built once before the loops, marks each tile empty, partial or full. An empty tile has no key any query of the block may see: its two matmuls never run, and neither does the round trip of Q_i, O_i, ℓ_i and m_i through HBM that every visited tile costs.',
    'fa1.loadQOlm':
      'The Q block comes in together with its current output rows and their running max and sum, from HBM. This traffic is what FA2 removes by swapping the loops.',
    'fa1.qk': 'One tile of scores: Br queries against Bc keys, scaled by 1/√d.',
    'fa1.mask':
      'Masked scores become −∞ and drop out of the softmax. Only partial tiles run the mask, on each of their entries; a full tile (every key visible) needs no mask work.',
    'fa1.rowmax': 'FA1 takes the max of this tile alone (m̃_ij) and, separately, the new running max m_new = max(m_i, m̃_ij).',
    'fa1.exp':
      'Probabilities of this tile against its own max m̃_ij, as Algorithm 1 of the FlashAttention paper (arXiv 2205.14135) has it; the correction to the running max comes in the next steps.',
    'fa1.rowsum':
      "Both sums are brought to the common max m_new before they are added: the old one by e^(m_i − m_new), the tile's by e^(m̃_ij − m_new).",
    'fa1.rescale':
      'FA1 keeps O normalized in HBM, so the old rows are both rescaled to the new max and re-divided by the new sum, on every step.',
    'fa1.pv':
      "This tile's contribution P̃_ij V_j, weighted by e^(m̃_ij − m_new) / ℓ_new, is added. V is used as stored (Bc × d), not transposed.",
    'fa1.write': 'O_i, ℓ_i and m_i go back to HBM, to be read again when the next K/V block reaches this Q block.',
  },
  corrections: null,
};
