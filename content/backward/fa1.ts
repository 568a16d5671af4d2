// FlashAttention (FA1) backward pass, as the step engine runs it (engine/algorithms/fa1/backward.ts).
import type { AlgorithmContent } from '../types.ts';

export const fa1BackwardContent: AlgorithmContent = {
  algorithm: 'fa1bwd',
  title: 'FlashAttention backward',
  source: 'Dao et al., "FlashAttention", 2022, Algorithm 4 (without dropout)',
  lines: [
    { id: 'fa1bwd.init', text: 'dQ ← 0 in HBM (an fp32 buffer)', indent: 0, kinds: ['write'] },
    { id: '', text: 'for j = 1 … Tc:            (outer loop over K/V blocks)', indent: 0 },
    { id: 'fa1bwd.loadKV', text: 'load K_j, V_j; on chip: dK_j ← 0, dV_j ← 0', indent: 1, kinds: ['load'] },
    { id: '', text: 'for i = 1 … Tr:          (inner loop over Q blocks)', indent: 1 },
    { id: 'fa1bwd.loadQOdOdQlm', text: 'load Q_i, O_i, dO_i, dQ_i, ℓ_i, m_i', indent: 2, kinds: ['load'] },
    { id: 'fa1bwd.qk', text: 'S_ij = Q_i K_jᵀ · scale   (+ softcap, ALiBi)', indent: 2, kinds: ['qk'] },
    { id: 'fa1bwd.mask', text: 'S_ij ← −∞ where the mask hides a key', indent: 2, kinds: ['mask'] },
    { id: 'fa1bwd.recompute', text: 'P_ij = diag(ℓ_i)⁻¹ exp(S_ij − m_i)', indent: 2, kinds: ['recompute'] },
    { id: 'fa1bwd.dv', text: 'dV_j ← dV_j + P_ijᵀ dO_i', indent: 2, kinds: ['dv'] },
    { id: 'fa1bwd.dp', text: 'dP_ij = dO_i V_jᵀ', indent: 2, kinds: ['dp'] },
    { id: 'fa1bwd.dsum', text: 'D_i = rowsum(dO_i ∘ O_i)', indent: 2, kinds: ['dsum'] },
    { id: 'fa1bwd.ds', text: 'dS_ij = P_ij ∘ (dP_ij − D_i)', indent: 2, kinds: ['ds'] },
    { id: 'fa1bwd.dq', text: 'dQ_i ← dQ_i + scale · dS_ij K_j;  write dQ_i to HBM', indent: 2, kinds: ['dq'] },
    { id: 'fa1bwd.dk', text: 'dK_j ← dK_j + scale · dS_ijᵀ Q_i', indent: 2, kinds: ['dk'] },
    { id: 'fa1bwd.writeKV', text: 'write dK_j, dV_j to HBM', indent: 1, kinds: ['write'] },
  ],
  explain: {
    'fa1bwd.init': 'dQ collects one term from every K/V block, across outer iterations, so it lives in HBM from the start, set to zero.',
    'fa1bwd.loadKV': 'The outer loop keeps K_j and V_j on chip, together with the gradients dK_j and dV_j, which sum over every Q block.',
    'fa1bwd.loadQOdOdQlm':
      "Everything row block i needs comes in: Q_i, the forward's O_i, the incoming dO_i, the dQ_i accumulated so far, and the forward's statistics ℓ_i and m_i (FA1 keeps both; FA2 keeps only their combination L = m + log ℓ).",
    'fa1bwd.qk': 'The scores are recomputed instead of read: storing S and P from the forward would cost N² memory per head.',
    'fa1bwd.mask': 'Masked scores become −∞, so their P is 0 and they pass no gradient.',
    'fa1bwd.recompute': "P is rebuilt from the forward's m and ℓ: exp(S − m) divided by ℓ is the softmax the forward produced.",
    'fa1bwd.dv': 'dV_j collects P_ijᵀ dO_i, on chip.',
    'fa1bwd.dp': 'The gradient of the probabilities: dP_ij = dO_i V_jᵀ.',
    'fa1bwd.dsum':
      'D_i = dO_i · O_i replaces Σ_j P_ij dP_ij, which would need a whole row. Algorithm 4 computes it again at every inner step; FA2 moves it into a pass of its own.',
    'fa1bwd.ds': "The softmax's gradient: dS_ij = P_ij (dP_ij − D_i), times 1 − tanh²(s/c) with a softcap.",
    'fa1bwd.dq':
      "dQ_i is read, updated and written back to HBM at every inner step: a plain read-modify-write, safe because the loops run one after another and nothing else touches dQ_i meanwhile. This round trip is FA1's largest extra traffic.",
    'fa1bwd.dk': 'dK_j collects τ dS_ijᵀ Q_i, on chip like dV_j.',
    'fa1bwd.writeKV': 'After the inner loop, dK_j and dV_j are final and written once.',
  },
  corrections: null,
};
