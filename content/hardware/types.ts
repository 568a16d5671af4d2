// Hardware lessons: what the memory map and the warp-role timeline show for one kernel,
// topic by topic, and for every phase kind the debugger can stop on, what the hardware is
// doing at that moment. Text is Markdown-lite (paragraphs, **bold**, `code`) with KaTeX
// ($…$ inline, $$…$$ display); app/hardware/lesson-text.ts renders it.

import type { BackwardPhaseKind, ForwardPhaseKind, SkipPhaseKind } from '../../engine/api.ts';

export interface HardwareTopic {
  id: string;
  title: string;
  text: string;
}

export interface HardwareLesson {
  /** Step-algorithm id (equal to the hardware schedule's id). */
  algorithm: string;
  title: string;
  topics: HardwareTopic[];
  /** For each phase kind: the hardware's side of that step, as the views show it. */
  steps: Record<ForwardPhaseKind, string> & Partial<Record<BackwardPhaseKind | SkipPhaseKind, string>>;
}

/** Keeps backslashes as written (KaTeX needs them) and unescapes backticks for code spans: the lessons' own tag. */
export { md as tex } from '../lessons/types.ts';
