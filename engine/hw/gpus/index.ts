// The GPUs FlashScope models, by id.
import { A100 } from './a100.ts';
import { B200 } from './b200.ts';
import { H100 } from './h100.ts';
import { H200 } from './h200.ts';
import { RTX4060 } from './rtx4060.ts';
import type { GpuSpec } from './spec.ts';

export type { GpuId, GpuSpec } from './spec.ts';

export const GPUS: readonly GpuSpec[] = [A100, RTX4060, H100, H200, B200];

export function gpuById(id: string): GpuSpec {
  const g = GPUS.find((x) => x.id === id);
  if (!g) throw new Error(`unknown GPU '${id}'; known: ${GPUS.map((x) => x.id).join(', ')}`);
  return g;
}
