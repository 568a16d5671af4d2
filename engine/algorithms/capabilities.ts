// What an algorithm's kernels accept, answered from its descriptor's declaration alone:
// the dtype, the head-dim pair and the score modifiers. The refusal names the field at
// fault and says what to pick instead, so the problem panel can offer a one-click fix
// without starting a pass. descriptors.test.ts holds each declaration to its engine.

import { type AttentionProblem, isFp8 } from '../core/problem.ts';
import type { AlgorithmDescriptor, Modifier } from './descriptor.ts';

export interface DeclaredRefusal {
  field: string;
  message: string;
}

const MODIFIERS: readonly Modifier[] = ['alibi', 'softcap', 'sinks'];

function lacking(p: AttentionProblem, lacks: Partial<Record<Modifier, string>> | undefined): DeclaredRefusal | null {
  for (const m of MODIFIERS) {
    const message = lacks?.[m];
    if (message !== undefined && p[m] !== undefined) return { field: m, message };
  }
  return null;
}

/** The refusal `d` declares for `problem` on `pass` (forward with no switches set), or null when it accepts it. */
export function declaredRefusal(d: AlgorithmDescriptor, pass: 'forward' | 'backward', p: AttentionProblem): DeclaredRefusal | null {
  if (pass === 'backward') {
    if (!d.backward)
      return {
        field: 'pass',
        message: `${d.id} has no backward pass in FlashScope (standard, fa1, fa2 and fa3 have one); choose the forward pass or one of those`,
      };
    if (isFp8(p.dtype)) return fp8Refusal(`the ${d.id} backward`, p);
  } else if (!d.supports.dtypes.includes(p.dtype)) {
    return d.supports.dtypeRefusal ? { field: 'dtype', message: d.supports.dtypeRefusal(p.dtype) } : fp8Refusal(d.id, p);
  }
  const s = d.supports;
  const lowPrec = pass === 'forward' && isFp8(p.dtype) ? s.fp8 : undefined;
  const modifier = lacking(p, s.lacks) ?? lacking(p, lowPrec?.lacks);
  if (modifier) return modifier;
  if (s.headDims?.equal && p.d !== p.dv) return { field: 'dv', message: s.headDims.equal(p.d, p.dv) };
  if (lowPrec && p.d !== p.dv && !lowPrec.headDimPairs.some(([d, dv]) => d === p.d && dv === p.dv))
    return { field: 'dv', message: lowPrec.pairRefusal(p.d, p.dv) };
  if (s.headDims?.max !== undefined && p.d > s.headDims.max) return { field: 'd', message: s.headDims.maxRefusal(p.d) };
  return null;
}

function fp8Refusal(name: string, p: AttentionProblem): DeclaredRefusal {
  return {
    field: 'dtype',
    message: `${name} has no FP8 path; ${p.dtype} runs only on fa3's forward (FA3's FP8 kernel) — pick fp16, bf16 or fp32 here`,
  };
}
