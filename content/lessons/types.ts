// The long-form lesson of a hardware-modelling algorithm: intro and per-step-kind text in
// Markdown with KaTeX (`$…$`, `$$…$$`), feature and support tables, and the plain-text
// pseudo-code content the debugger pane shows. lessons.test.ts checks every line id the
// algorithm emits against `content.lines` and renders every formula with KaTeX.

import type { PhaseKind } from '../../engine/api.ts';
import type { AlgorithmContent } from '../types.ts';

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
  /** What the model follows: papers (title, arXiv id, section) and upstream files at a named commit. */
  sources: string;
  /** Markdown: what the kernel is and why it is shaped this way. */
  intro: string;
  /** What a step of each kind does in this kernel, with formulas. */
  steps: Partial<Record<PhaseKind, string>>;
  features: FeatureNote[];
  support: SupportRow[];
  /**
   * The debugger's pseudo-code pane (plain text with Unicode maths, as content/types.ts
   * defines it): listing, one explanation per line id, and corrections to the published listing.
   */
  content: AlgorithmContent;
}

/**
 * Template tag for lesson text: backslashes stay as written (KaTeX needs them), and an
 * escaped backtick becomes a plain one, so Markdown code spans can be written inside the template.
 */
export function md(strings: TemplateStringsArray, ...values: unknown[]): string {
  return String.raw(strings, ...values).replace(/\\`/g, '`');
}
