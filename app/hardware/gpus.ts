// Which GPUs a kernel's schedule can be drawn for, and the one each starts on: the
// architecture the kernel was written for.

import { GPUS } from '../../engine/hw/gpus/index.ts';
import { hwAlgorithmById } from '../../engine/hw/registry.ts';
import { ALGORITHM_DEFAULTS } from '../../engine/defaults/algorithm-defaults.ts';

export function gpusFor(algorithm: string): { id: string; name: string }[] {
  const a = hwAlgorithmById(algorithm);
  return GPUS.filter((g) => a.arch.includes(g.sm)).map((g) => ({ id: g.id, name: g.name }));
}

export function defaultGpu(algorithm: string): string {
  return ALGORITHM_DEFAULTS[algorithm]?.gpu ?? gpusFor(algorithm)[0].id;
}
