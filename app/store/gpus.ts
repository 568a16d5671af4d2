// Which GPUs a kernel's schedule can be drawn for, and the one each starts on: the
// architecture the kernel was written for. The backward kernels are kernels of their own
// (FA2's backward runs on the SM80 path, FA3's on SM90), so choices are kept per pass.

import { GPUS, hwAlgorithmFor, type HwPass, descriptorOf } from '../../engine/api.ts';

export function gpusFor(algorithm: string, pass: HwPass = 'forward'): { id: string; name: string }[] {
  const a = hwAlgorithmFor(algorithm, pass);
  return GPUS.filter((g) => a.arch.includes(g.sm)).map((g) => ({ id: g.id, name: g.name }));
}

export function defaultGpu(algorithm: string, pass: HwPass = 'forward'): string {
  const d = descriptorOf(algorithm);
  const preferred = pass === 'backward' ? d.backwardGpu : d.defaults.gpu;
  return preferred ?? gpusFor(algorithm, pass)[0].id;
}

/** Key of a pane's GPU and switch choices: the algorithm, and its backward apart. */
export function choiceKey(algorithm: string, pass: HwPass): string {
  return pass === 'backward' ? `${algorithm}/backward` : algorithm;
}
