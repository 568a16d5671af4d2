// Which GPUs a kernel's schedule can be drawn for, and the one each starts on: the
// architecture the kernel was written for.

import { GPUS } from '../../engine/hw/gpus/index.ts';
import { hwAlgorithmById } from '../../engine/hw/registry.ts';

const PREFERRED: Record<string, string> = { fa3: 'h100', fa4: 'b200', 'fmha-v2': 'rtx4060', 'cute-fa2': 'a100', 'flash-decoding': 'h100' };

export function gpusFor(algorithm: string): { id: string; name: string }[] {
  const a = hwAlgorithmById(algorithm);
  return GPUS.filter((g) => a.arch.includes(g.sm)).map((g) => ({ id: g.id, name: g.name }));
}

export function defaultGpu(algorithm: string): string {
  return PREFERRED[algorithm] ?? gpusFor(algorithm)[0].id;
}
