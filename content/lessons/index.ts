// Lessons of the kernel-modelling algorithms (those with a real kernel's schedule or numerics), by algorithm id.

import { cuteFa2Lesson } from './cute-fa2.ts';
import { fa3Lesson } from './fa3.ts';
import { fa4Lesson } from './fa4.ts';
import { flashDecodingLesson } from './flash-decoding.ts';
import { fmhaV2Lesson } from './fmha-v2.ts';
import { sageLesson } from './sage.ts';
import type { AlgorithmLesson } from './types.ts';

export const HW_LESSONS: Record<string, AlgorithmLesson> = {
  fa3: fa3Lesson,
  fa4: fa4Lesson,
  'fmha-v2': fmhaV2Lesson,
  'cute-fa2': cuteFa2Lesson,
  'flash-decoding': flashDecodingLesson,
  sage: sageLesson,
};
