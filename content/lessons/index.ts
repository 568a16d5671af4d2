// Lessons of the kernel-modelling algorithms (those with a real kernel's schedule or numerics), by algorithm id.

import { cuteFa2Lesson } from './cute-fa2.ts';
import { fa3Lesson } from './fa3.ts';
import { fa4Lesson } from './fa4.ts';
import { flashDecodingLesson } from './flash-decoding.ts';
import { fmhaV2Lesson } from './fmha-v2.ts';
import { sageLesson } from './sage.ts';
import type { AlgorithmId } from '../../engine/api.ts';
import type { AlgorithmLesson } from './types.ts';

/** The algorithms taught from the papers' pseudo-code alone (content/standard.ts, fa1.ts, fa2.ts); every other built-in has a kernel lesson. */
export type PaperAlgorithmId = 'standard' | 'fa1' | 'fa2';

/** One lesson per kernel-modelling built-in: the compiler names a new algorithm that lacks one. */
export const HW_LESSONS: Readonly<Record<Exclude<AlgorithmId, PaperAlgorithmId>, AlgorithmLesson>> = {
  fa3: fa3Lesson,
  fa4: fa4Lesson,
  'fmha-v2': fmhaV2Lesson,
  'cute-fa2': cuteFa2Lesson,
  'flash-decoding': flashDecodingLesson,
  sage: sageLesson,
};

/** The kernel lesson of `id`, undefined for the paper algorithms and for registered variants. */
export function hwLessonFor(id: string): AlgorithmLesson | undefined {
  return (HW_LESSONS as Readonly<Record<string, AlgorithmLesson>>)[id];
}
