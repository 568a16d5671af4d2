// FlashAttention-3 backward (Hopper), as the step engine models it (engine/algorithms/fa3/backward.ts).
import type { AlgorithmContent } from '../types.ts';

export const fa3BackwardContent: AlgorithmContent = {
  algorithm: 'fa3bwd',
  title: 'FlashAttention-3 backward (Hopper)',
  source: 'Shah et al., "FlashAttention-3", 2024, and the hopper/ backward kernels of Dao-AILab/flash-attention',
  lines: [
    { id: '', text: 'preprocess kernel, per row block i:', indent: 0 },
    { id: 'fa3bwd.preLoad', text: 'load O_i, dO_i, LSE_i', indent: 1, kinds: ['load'] },
    { id: 'fa3bwd.dsum', text: 'D_i = rowsum(dO_i ∘ O_i)', indent: 1, kinds: ['dsum'] },
    { id: 'fa3bwd.preWrite', text: 'write D_i, LSE_i · log₂e; zero dQaccum_i', indent: 1, kinds: ['write'] },
    { id: '', text: 'main kernel, one CTA per K/V block j:', indent: 0 },
    { id: 'fa3bwd.loadKV', text: 'producer: load K_j, V_j once (TMA)', indent: 1, kinds: ['load'] },
    { id: 'fa3bwd.loadQ', text: 'producer: Q_i, LSE_i into the next free slot of the Q ring', indent: 1, kinds: ['load'] },
    { id: 'fa3bwd.loaddO', text: 'producer: dO_i, D_i into the next free slot of the dO ring', indent: 1, kinds: ['load'] },
    { id: '', text: 'for each visible row block i:   (MMA warpgroups)', indent: 1 },
    { id: 'fa3bwd.qk', text: 'S = Q_i K_jᵀ  (wgmma)', indent: 2, kinds: ['qk'] },
    { id: 'fa3bwd.dp', text: 'dP = dO_i V_jᵀ  (wgmma, issued right after S)', indent: 2, kinds: ['dp'] },
    { id: 'fa3bwd.mask', text: 'S ← −∞ where the mask hides a key', indent: 2, kinds: ['mask'] },
    { id: 'fa3bwd.recompute', text: 'P = exp2(S · scale · log₂e − LSE_i · log₂e)', indent: 2, kinds: ['recompute'] },
    { id: 'fa3bwd.ds', text: 'dS = P ∘ (dP − D_i); dS (and P when d > 128) to shared memory in 16 bits', indent: 2, kinds: ['ds'] },
    { id: 'fa3bwd.dv', text: 'dV_j ← dV_j + Pᵀ dO_i  (registers)', indent: 2, kinds: ['dv'] },
    { id: 'fa3bwd.dq', text: 'dQ partial dS K_j → dQ writer warp: reduce-add into dQaccum_i', indent: 2, kinds: ['dq'] },
    { id: 'fa3bwd.dk', text: 'dK_j ← dK_j + dSᵀ Q_i  (registers)', indent: 2, kinds: ['dk'] },
    { id: 'fa3bwd.writeKV', text: 'epilogue: write scale · dK_j and dV_j', indent: 1, kinds: ['write'] },
    { id: '', text: 'postprocess kernel, per row block i:', indent: 0 },
    { id: 'fa3bwd.convert', text: 'dQ_i = scale · dQaccum_i in the input dtype', indent: 1, kinds: ['dqconvert'] },
  ],
  explain: {
    'fa3bwd.preLoad': 'A separate preprocess kernel reads O, dO and the LSE before the main kernel starts.',
    'fa3bwd.dsum': 'D_i = dO_i · O_i, one number per row (the kernel calls it dPsum), as in FA2.',
    'fa3bwd.preWrite':
      'D goes to HBM, the LSE is stored in log₂ units so the main kernel can use exp2, and the fp32 dQ accumulator is zeroed.',
    'fa3bwd.loadKV': 'The producer warp issues the K_j and V_j copies once; they stay in shared memory for the whole CTA.',
    'fa3bwd.loadQ':
      'Q_i and LSE_i stream through a ring of shared-memory slots. A copy waits for a free slot, so loads run ahead of the math by at most the ring depth.',
    'fa3bwd.loaddO': 'dO_i and D_i stream through a second ring; the dQ matmul frees its slot.',
    'fa3bwd.qk': 'The MMA warpgroups recompute S with wgmma. FlashScope shows the warpgroups that split a tile as one unit.',
    'fa3bwd.dp': 'dP = dO V_jᵀ is issued right behind S, so the tensor cores stay busy while the softmax part waits.',
    'fa3bwd.mask': 'Masked scores become −∞ (the softcap derivative is taken before the mask).',
    'fa3bwd.recompute': 'P from the LSE in log₂ units: exp2 is the instruction the hardware has.',
    'fa3bwd.ds':
      'dS = P ∘ (dP − D_i), converted to 16 bits. dS always goes to shared memory, where dQ = dS K_j reads it; up to d = 128 the dV and dK matmuls take P and dS from registers, at d 192 and 256 P is stored beside dS and both are read from shared memory (Mma_dKV_is_RS, hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp@0251105a l. 75, 279-289, 901-923).',
    'fa3bwd.dv': 'dV_j accumulates in registers for the life of the CTA.',
    'fa3bwd.dq':
      'The MMA warpgroups compute the dQ partial dS K_j into shared memory, and a dedicated warp adds it into the fp32 dQaccum in HBM with a bulk reduce-add: the atomic add of this kernel. The sum is kept without the softmax scale until the postprocess. With the deterministic switch, a semaphore per row block makes the CTAs add in a fixed order, at the cost of waiting.',
    'fa3bwd.dk': 'dK_j accumulates in registers, without the scale until the epilogue.',
    'fa3bwd.writeKV': 'The epilogue multiplies dK_j by the scale and writes dK_j and dV_j (with GQA, adds them into fp32 accumulators).',
    'fa3bwd.convert': 'A postprocess kernel multiplies dQaccum by the scale and converts it to the input dtype.',
  },
  corrections: null,
};
