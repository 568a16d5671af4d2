// --path of `run --backend webgpu`, looked up as an own key so 'constructor' or
// '__proto__' is refused like any other unknown path.

import { PATH_LABELS, type WebGpuPath } from '../webgpu/device.ts';
import { ArgsError } from './args.ts';

/** --path's value when it names a WebGPU path (an own key of PATH_LABELS: 'constructor' is not one). */
export function webGpuPathOption(v: string): WebGpuPath {
  if (!Object.hasOwn(PATH_LABELS, v)) throw new ArgsError(`--path must be one of ${Object.keys(PATH_LABELS).join(', ')}, got '${v}'`);
  return v as WebGpuPath;
}
