// Shapes of the teaching text the debugger shows next to the trace. Pure data, no DOM, so
// the engine's Node tests and lessons can check it too.

import type { PhaseKind } from '../engine/api.ts';

export interface PseudoLine {
  /** Matches TraceEvent.line; empty for lines no step stops on (loop headers, comments). */
  id: string;
  /** Pseudo-code, plain text with Unicode maths (ᵀ, ←, ·). */
  text: string;
  indent: number;
  /** Phase kinds this line performs: the fallback when an event's line id is unknown. */
  kinds?: PhaseKind[];
}

export interface AlgorithmContent {
  algorithm: string;
  title: string;
  /** Where the pseudo-code follows from. */
  source: string;
  lines: PseudoLine[];
  /** One or two sentences per line id: what this step does and why. */
  explain: Record<string, string>;
  /**
   * Mistakes in the published listing this pseudo-code follows (a paper's algorithm box), each
   * with what FlashScope computes instead; null when none is known.
   */
  corrections: { listing: string; notes: string[] } | null;
}
