// The shape of an algorithm lesson: what the UI shows next to a trace. Text is Markdown;
// `$…$` and `$$…$$` spans are KaTeX. Every trace event's `line` id must have an entry in
// `lines` (lessons.test.ts checks it against the algorithms' real traces).

import type { PhaseKind } from '../../engine/trace/events.ts';

export interface PseudoLine {
  /** Indentation level in the pseudo-code listing. */
  indent: number;
  /** The pseudo-code text, KaTeX allowed. */
  text: string;
}

export interface FeatureNote {
  key: string;
  default: string;
  text: string;
}

export interface SupportRow {
  variant: string;
  kernel: 'yes' | 'no' | 'partly';
  flashscope: 'runs' | 'rejected';
  note: string;
}

export interface AlgorithmLesson {
  /** The StepAlgorithm id. */
  id: string;
  title: string;
  /** Target hardware, e.g. 'Hopper (SM90)'. */
  hardware: string;
  /** Which seed notes the model follows. */
  sources: string;
  /** Markdown: what the kernel is and why it is shaped this way. */
  intro: string;
  /** Pseudo-code listing: line id (as in trace events) → text. Order is display order. */
  lines: Record<string, PseudoLine>;
  /** What a step of each kind does in this kernel, with formulas. */
  steps: Partial<Record<PhaseKind, string>>;
  features: FeatureNote[];
  support: SupportRow[];
  /** Where a seed note is wrong or loose and we follow the paper or the code instead. */
  corrections: string[];
}

/**
 * Template tag for lesson text: backslashes stay as written (KaTeX needs them), and an
 * escaped backtick becomes a plain one, so Markdown code spans can be written inside the template.
 */
export function md(strings: TemplateStringsArray, ...values: unknown[]): string {
  return String.raw(strings, ...values).replace(/\\`/g, '`');
}
