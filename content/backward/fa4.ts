// FlashAttention-4 backward (Blackwell), as the step engine models it (engine/algorithms/fa4/backward.ts).
import type { AlgorithmContent } from '../types.ts';

export const fa4BackwardContent: AlgorithmContent = {
  algorithm: 'fa4bwd',
  title: 'FlashAttention-4 backward (Blackwell)',
  source:
    '"FlashAttention-4: Algorithm and Kernel Pipelining Co-Design for Asymmetric Hardware Scaling" (arXiv 2603.05451); flash_attn/cute/flash_bwd_sm100.py and interface.py at Dao-AILab/flash-attention 0251105a',
  lines: [
    { id: '', text: 'preprocess kernel, per row block i:', indent: 0 },
    { id: 'fa4bwd.preLoad', text: 'load O_i, dO_i, LSE_i', indent: 1, kinds: ['load'] },
    { id: 'fa4bwd.dsum', text: 'D_i = rowsum(dO_i ∘ O_i)', indent: 1, kinds: ['dsum'] },
    { id: 'fa4bwd.preWrite', text: 'write D_i, LSE_i · log₂e; zero dQaccum_i', indent: 1, kinds: ['write'] },
    { id: '', text: 'main kernel, one CTA per K/V block j (a pair of CTAs for two blocks when d ≥ 128):', indent: 0 },
    { id: 'fa4bwd.loadKV', text: 'load warp: K_j, V_j once (TMA)', indent: 1, kinds: ['load'] },
    { id: 'fa4bwd.loadQ', text: 'load warp: Q_i, LSE_i into the next free slot of the Q ring', indent: 1, kinds: ['load'] },
    { id: 'fa4bwd.loaddO', text: 'load warp: dO_i, D_i into the dO slot', indent: 1, kinds: ['load'] },
    { id: '', text: 'for each visible row block i:   (MMA warp and compute warps)', indent: 1 },
    { id: 'fa4bwd.qk', text: 'S = K_j Q_iᵀ  (tcgen05.mma into TMEM)', indent: 2, kinds: ['qk'] },
    { id: 'fa4bwd.dp', text: 'dP = V_j dO_iᵀ  (tcgen05.mma into TMEM)', indent: 2, kinds: ['dp'] },
    { id: 'fa4bwd.mask', text: 'S ← −∞ where the mask hides a key', indent: 2, kinds: ['mask'] },
    { id: 'fa4bwd.recompute', text: 'P = exp2(S · scale · log₂e − LSE_i · log₂e), back into TMEM over S', indent: 2, kinds: ['recompute'] },
    { id: 'fa4bwd.ds', text: 'dS = P ∘ (dP − D_i) in 16 bits: into TMEM over dP and into shared memory', indent: 2, kinds: ['ds'] },
    { id: 'fa4bwd.dv', text: 'dV_j ← dV_j + Pᵀ dO_i  (TMEM)', indent: 2, kinds: ['dv'] },
    { id: 'fa4bwd.dk', text: 'dK_j ← dK_j + dSᵀ Q_i  (TMEM)', indent: 2, kinds: ['dk'] },
    { id: 'fa4bwd.dq', text: 'dQ partial dS K_j → reduce warps: reduce-add into dQaccum_i', indent: 2, kinds: ['dq'] },
    { id: 'fa4bwd.writeKV', text: 'epilogue: write scale · dK_j and dV_j', indent: 1, kinds: ['write'] },
    { id: '', text: 'postprocess kernel, per row block i:', indent: 0 },
    { id: 'fa4bwd.convert', text: 'dQ_i = scale · dQaccum_i in the input dtype', indent: 1, kinds: ['dqconvert'] },
  ],
  explain: {
    'fa4bwd.preLoad': 'A separate preprocess kernel reads O, dO and the LSE before the main kernel starts.',
    'fa4bwd.dsum': 'D_i = dO_i · O_i, one number per row (the kernel calls it dPsum), as in FA2.',
    'fa4bwd.preWrite':
      'D goes to HBM, the LSE is stored in log₂ units so the main kernel can use exp2, and the fp32 dQ accumulator is zeroed.',
    'fa4bwd.loadKV':
      'The load warp brings K_j and V_j in once, together with the first Q and dO; they stay in shared memory for the whole CTA. From d = 128 two CTAs on two SMs share each matrix multiply, and each loads half of every Q and dO tile.',
    'fa4bwd.loadQ':
      'Q_i and LSE_i stream through a ring of shared-memory slots (two on one CTA, one in a pair). A copy waits for a free slot, so loads run ahead of the math by at most the ring depth.',
    'fa4bwd.loaddO': 'dO_i and D_i stream through one slot; the dV matmul frees it.',
    'fa4bwd.qk':
      'One MMA warp issues every matrix multiply; the results land in tensor memory (TMEM), not in registers. S is computed transposed, keys by rows, so each CTA keeps its keys in the MMA’s row dimension.',
    'fa4bwd.dp': 'dP = V_j dO_iᵀ lands in its own TMEM columns, so the compute warps can read it as soon as they are done with P.',
    'fa4bwd.mask': 'Masked scores become −∞ before the exponential (the softcap derivative is taken before the mask).',
    'fa4bwd.recompute':
      'Eight compute warps read S from TMEM, take exp2 against the LSE, and write P back over S in 16 bits: the dV matmul reads P straight from TMEM.',
    'fa4bwd.ds':
      'dS = P ∘ (dP − D_i), converted to 16 bits. The dK matmul reads it from TMEM (written over dP), the dQ matmul from shared memory.',
    'fa4bwd.dv': 'dV_j accumulates in TMEM for the life of the CTA.',
    'fa4bwd.dk': 'dK_j accumulates in TMEM, without the scale until the epilogue.',
    'fa4bwd.dq':
      'The dQ partial dS K_j lands in TMEM; four reduce warps read it out and add it into the fp32 dQaccum in HBM with bulk reduce-adds, a few columns at a time through shared memory: the atomic add of this kernel. The sum is kept without the softmax scale until the postprocess. With the deterministic switch, a semaphore per row block makes the CTAs add in a fixed order, at the cost of waiting.',
    'fa4bwd.writeKV':
      'The compute warps read dK_j and dV_j out of TMEM, multiply dK_j by the scale and write both (with GQA, add them into fp32 accumulators that a later kernel converts).',
    'fa4bwd.convert': 'A postprocess kernel multiplies dQaccum by the scale and converts it to the input dtype.',
  },
  corrections: null,
};
