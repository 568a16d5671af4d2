// Standard attention's backward pass (engine/algorithms/standard/backward.ts): every N×N
// matrix in HBM.
import type { AlgorithmContent } from '../types.ts';

export const standardBackwardContent: AlgorithmContent = {
  algorithm: 'standardbwd',
  title: 'Standard attention backward',
  source: 'Dao et al., "FlashAttention", 2022, Algorithm 3',
  lines: [
    { id: '', text: 'pass 1, for each row strip i:', indent: 0 },
    { id: 'standardbwd.loadPdO', text: 'load P_i, dO_i from HBM', indent: 1, kinds: ['load'] },
    { id: 'standardbwd.dv', text: 'dV ← dV + P_iᵀ dO_i', indent: 1, kinds: ['dv'] },
    { id: 'standardbwd.writedV', text: 'write dV to HBM', indent: 0, kinds: ['write'] },
    { id: 'standardbwd.loadV', text: 'pass 2: load V', indent: 0, kinds: ['load'] },
    { id: 'standardbwd.loaddO', text: 'load dO_i', indent: 1, kinds: ['load'] },
    { id: 'standardbwd.dp', text: 'dP_i = dO_i Vᵀ', indent: 1, kinds: ['dp'] },
    { id: 'standardbwd.writedP', text: 'write dP_i to HBM', indent: 1, kinds: ['write'] },
    { id: '', text: 'pass 3, for each row strip i:', indent: 0 },
    { id: 'standardbwd.loadPdP', text: 'load P_i, dP_i (and S_i with a softcap)', indent: 1, kinds: ['load'] },
    { id: 'standardbwd.ds', text: 'dS_i = P_i ∘ (dP_i − rowsum(dP_i ∘ P_i))', indent: 1, kinds: ['ds'] },
    { id: 'standardbwd.writedS', text: 'write dS_i to HBM', indent: 1, kinds: ['write'] },
    { id: 'standardbwd.loadK', text: 'pass 4: load K', indent: 0, kinds: ['load'] },
    { id: 'standardbwd.loaddS', text: 'load dS_i', indent: 1, kinds: ['load'] },
    { id: 'standardbwd.dq', text: 'dQ_i = scale · dS_i K', indent: 1, kinds: ['dq'] },
    { id: 'standardbwd.writedQ', text: 'write dQ_i to HBM', indent: 1, kinds: ['write'] },
    { id: '', text: 'pass 5, for each row strip i:', indent: 0 },
    { id: 'standardbwd.loaddSQ', text: 'load dS_i, Q_i', indent: 1, kinds: ['load'] },
    { id: 'standardbwd.dk', text: 'dK ← dK + scale · dS_iᵀ Q_i', indent: 1, kinds: ['dk'] },
    { id: 'standardbwd.writedK', text: 'write dK to HBM', indent: 0, kinds: ['write'] },
  ],
  explain: {
    'standardbwd.loadPdO':
      'The forward stored P, N_q × N_k numbers per head, and it has waited in HBM until now. The backward reads it strip by strip.',
    'standardbwd.dv': 'dV = Pᵀ dO, one row strip of P at a time.',
    'standardbwd.writedV': 'dV is complete after the last strip.',
    'standardbwd.loadV': 'The second pass needs V whole.',
    'standardbwd.loaddO': 'The incoming gradient of this strip.',
    'standardbwd.dp': 'dP = dO Vᵀ: another N_q × N_k matrix.',
    'standardbwd.writedP': 'dP goes to HBM, because the next pass needs whole rows of it.',
    'standardbwd.loadPdP': 'P and dP are read back; with a softcap, S as well, for the derivative of the cap.',
    'standardbwd.ds':
      'With whole rows in hand, D_i = rowsum(dP_i ∘ P_i) is taken directly, and dS = P ∘ (dP − D). The flash algorithms get the same D from dO · O instead.',
    'standardbwd.writedS': 'dS is the fourth N_q × N_k matrix in HBM (S, P, dP, dS).',
    'standardbwd.loadK': 'Pass four needs K whole.',
    'standardbwd.loaddS': 'The strip of dS for this row block.',
    'standardbwd.dq': 'dQ = τ dS K, row strip by row strip: each strip of dQ is finished in one step.',
    'standardbwd.writedQ': 'The strip of dQ is final and written.',
    'standardbwd.loaddSQ': 'dS and Q again, for the last matmul.',
    'standardbwd.dk': 'dK = τ dSᵀ Q, a sum over every row strip.',
    'standardbwd.writedK': 'dK is complete after the last strip.',
  },
  corrections: null,
};
