// Hardware lessons by algorithm id.

import { cuteFa2Hardware } from './cute-fa2.ts';
import { fa3Hardware } from './fa3.ts';
import { fa4Hardware } from './fa4.ts';
import { flashDecodingHardware } from './flash-decoding.ts';
import { fmhaV2Hardware } from './fmha-v2.ts';
import type { HardwareLesson } from './types.ts';

export const HARDWARE_LESSONS: readonly HardwareLesson[] = [
  fa3Hardware,
  fa4Hardware,
  fmhaV2Hardware,
  cuteFa2Hardware,
  flashDecodingHardware,
];

export function hardwareLessonFor(algorithm: string): HardwareLesson | undefined {
  return HARDWARE_LESSONS.find((l) => l.algorithm === algorithm);
}
