// FlashAttention-2 backward pass, as the step engine runs it (engine/algorithms/fa2/backward.ts).
import type { AlgorithmContent } from '../types.ts';

export const fa2BackwardContent: AlgorithmContent = {
  algorithm: 'fa2bwd',
  title: 'FlashAttention-2 backward',
  source: 'Dao, "FlashAttention-2", 2023, Algorithm 2',
  lines: [
    { id: '', text: 'preprocessing, one row block i at a time:', indent: 0 },
    { id: 'fa2bwd.loadOdO', text: 'load O_i, dO_i from HBM', indent: 1, kinds: ['load'] },
    { id: 'fa2bwd.dsum', text: 'D_i = rowsum(dO_i ∘ O_i)', indent: 1, kinds: ['dsum'] },
    { id: 'fa2bwd.writeD', text: 'write D_i; zero the fp32 accumulator dQaccum_i', indent: 1, kinds: ['write'] },
    { id: '', text: 'for j = 1 … Tc:            (one worker per K/V block, all at once)', indent: 0 },
    { id: 'fa2bwd.loadKV', text: 'load K_j, V_j; on chip: dK_j ← 0, dV_j ← 0', indent: 1, kinds: ['load'] },
    { id: '', text: 'for i = 1 … Tr:          (row blocks this worker sees)', indent: 1 },
    { id: 'fa2bwd.loadQ', text: 'load Q_i, dO_i, L_i, D_i', indent: 2, kinds: ['load'] },
    { id: 'fa2bwd.qk', text: 'S_ij = Q_i K_jᵀ · scale   (+ softcap, ALiBi)', indent: 2, kinds: ['qk'] },
    { id: 'fa2bwd.mask', text: 'S_ij ← −∞ where the mask hides a key', indent: 2, kinds: ['mask'] },
    { id: 'fa2bwd.recompute', text: 'P_ij = exp(S_ij − L_i)', indent: 2, kinds: ['recompute'] },
    { id: 'fa2bwd.dv', text: 'dV_j ← dV_j + P_ijᵀ dO_i', indent: 2, kinds: ['dv'] },
    { id: 'fa2bwd.dp', text: 'dP_ij = dO_i V_jᵀ', indent: 2, kinds: ['dp'] },
    { id: 'fa2bwd.ds', text: 'dS_ij = P_ij ∘ (dP_ij − D_i)', indent: 2, kinds: ['ds'] },
    { id: 'fa2bwd.dq', text: 'dQaccum_i ← dQaccum_i + scale · dS_ij K_j   (atomic add in HBM)', indent: 2, kinds: ['dq'] },
    { id: 'fa2bwd.dk', text: 'dK_j ← dK_j + scale · dS_ijᵀ Q_i', indent: 2, kinds: ['dk'] },
    { id: 'fa2bwd.writeKV', text: 'write dK_j, dV_j to HBM', indent: 1, kinds: ['write'] },
    { id: '', text: 'postprocessing, one row block i at a time:', indent: 0 },
    { id: 'fa2bwd.convert', text: 'dQ_i = dQaccum_i, converted to the input dtype', indent: 1, kinds: ['dqconvert'] },
  ],
  explain: {
    'fa2bwd.loadOdO':
      "Before the main loop, a small pass reads the forward's output O and the incoming gradient dO, row block by row block.",
    'fa2bwd.dsum':
      'D_i = Σ_j P_ij dP_ij would need a whole row of P and dP, which no tile holds. Since Σ_j P_ij V_j = O_i, the same sum is dO_i · O_i: one number per query row, from tensors already in HBM.',
    'fa2bwd.writeD': 'D goes to HBM next to the LSE, and the float32 accumulator for dQ is set to zero: every worker will add into it.',
    'fa2bwd.loadKV':
      'Each K/V block is one worker. Its K_j and V_j stay on chip for the whole inner loop, and so do dK_j and dV_j, which collect a term from every row block: that is why the backward puts K/V blocks outside.',
    'fa2bwd.loadQ': "The row block's Q, dO, its LSE and its D come in. FA2 keeps only L = m + log ℓ from the forward, not m and ℓ.",
    'fa2bwd.qk': 'The scores of this tile are computed again from Q and K: storing them in the forward would cost N² memory.',
    'fa2bwd.mask': 'Masked scores become −∞ again, so their P is 0 and they pass no gradient. Fully masked tiles are not visited at all.',
    'fa2bwd.recompute':
      'P is rebuilt from the scores and the saved LSE alone: exp(S − L) is already normalized, no running max or sum is needed.',
    'fa2bwd.dv': 'dV_j collects P_ijᵀ dO_i from every row block, on chip.',
    'fa2bwd.dp': 'The gradient of the probabilities: dP_ij = dO_i V_jᵀ.',
    'fa2bwd.ds':
      "The softmax's gradient: dS_ij = P_ij (dP_ij − D_i). With a softcap it is multiplied by the derivative of the cap, 1 − tanh²(s/c).",
    'fa2bwd.dq':
      'dQ_i needs a term from every K/V block, and the K/V blocks are different workers running at the same time: each adds its τ dS_ij K_j into the float32 accumulator with atomic adds, so no update is lost. The order of the adds is not fixed, so the last bits of dQ can change from run to run.',
    'fa2bwd.dk': 'dK_j collects τ dS_ijᵀ Q_i from every row block, on chip like dV_j.',
    'fa2bwd.writeKV': 'After its last row block the worker writes dK_j and dV_j once.',
    'fa2bwd.convert': 'When every worker is done, a last pass turns the float32 accumulator into dQ in the input dtype.',
  },
  corrections: null,
};
