// Teaching text by algorithm id, and the lookup from a trace event to its pseudo-code line.

import type { TraceEvent, AlgorithmId } from '../engine/api.ts';
import { fa1Content } from './fa1.ts';
import { fa2Content } from './fa2.ts';
import { standardContent } from './standard.ts';
import { HW_LESSONS } from './lessons/index.ts';
import type { AlgorithmContent } from './types.ts';
import { BACKWARD_CONTENT } from './backward/index.ts';

/** Pseudo-code and teaching text of every built-in's forward, by id (a missing one does not compile). */
export const FORWARD_CONTENT: Readonly<Record<AlgorithmId, AlgorithmContent>> = {
  standard: standardContent,
  fa1: fa1Content,
  fa2: fa2Content,
  ...(Object.fromEntries(Object.entries(HW_LESSONS).map(([id, l]) => [id, l.content])) as Record<
    keyof typeof HW_LESSONS,
    AlgorithmContent
  >),
};

export const CONTENT: readonly AlgorithmContent[] = [...Object.values(FORWARD_CONTENT), ...BACKWARD_CONTENT];

export function contentFor(algorithm: string): AlgorithmContent | undefined {
  return CONTENT.find((c) => c.algorithm === algorithm);
}

/** Index of the pseudo-code line an event executes: by line id, else by phase kind. */
export function lineIndexFor(c: AlgorithmContent, ev: TraceEvent): number {
  const exact = c.lines.findIndex((l) => l.id !== '' && l.id === ev.line);
  if (exact >= 0) return exact;
  return c.lines.findIndex((l) => l.kinds?.includes(ev.kind));
}
