// Teaching text by algorithm id, and the lookup from a trace event to its pseudo-code line.

import type { TraceEvent } from '../engine/trace/events.ts';
import { fa1Content } from './fa1.ts';
import { fa2Content } from './fa2.ts';
import { standardContent } from './standard.ts';
import { HW_LESSONS } from './lessons/index.ts';
import type { AlgorithmContent } from './types.ts';
import { BACKWARD_CONTENT } from './backward/index.ts';

export const CONTENT: readonly AlgorithmContent[] = [standardContent, fa1Content, fa2Content, ...Object.values(HW_LESSONS).map((l) => l.content), ...BACKWARD_CONTENT];

export function contentFor(algorithm: string): AlgorithmContent | undefined {
  return CONTENT.find((c) => c.algorithm === algorithm);
}

/** Index of the pseudo-code line an event executes: by line id, else by phase kind. */
export function lineIndexFor(c: AlgorithmContent, ev: TraceEvent): number {
  const exact = c.lines.findIndex((l) => l.id !== '' && l.id === ev.line);
  if (exact >= 0) return exact;
  return c.lines.findIndex((l) => l.kinds?.includes(ev.kind));
}
