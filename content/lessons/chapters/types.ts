// The shape of a guided lesson chapter. Pure data plus small functions over engine output:
// the UI renders the text, the lesson worker evaluates the step locators and the question
// answers against the trace of whatever problem the student has loaded. No DOM here.

import type { AlgorithmResult, LoadRequest, ProblemShape, ServingForm, TraceEvent } from '../../../engine/api.ts';

/**
 * Text with inline maths between single dollar signs ("the max $m_i$ of row $i$"); a block
 * of kind 'math' is one display formula in TeX. 'erratum' blocks name a mistake in a published
 * listing (paper and place) and what the lesson follows instead.
 */
export type LessonBlock =
  | { kind: 'p'; text: string }
  | { kind: 'math'; tex: string }
  | { kind: 'erratum'; text: string }
  /** Where a paper's description and the shipped code differ: what each of them does. */
  | { kind: 'code-wins'; text: string }
  | { kind: 'h'; text: string }
  /** A paragraph a student may skip, folded under its summary (a side road, not a step of the argument). */
  | { kind: 'more'; summary: string; text: string }
  /** An interactive piece placed at this point of the text. */
  | { kind: 'widget'; widget: 'online-softmax' | 'io-sweep' | 'fp8-formats' }
  /**
   * Text (and optionally a table) whose numbers the engine computes when the lesson shows it:
   * the lesson worker runs `compute`, the page renders what comes back.
   */
  | { kind: 'live'; label: string; compute(run: (req: LoadRequest) => EngineRun): LiveContent }
  /** A button that opens the Serving tab on this example (a serving layout the debugger pane cannot hold). */
  | { kind: 'serving'; label: string; form: ServingForm }
  /** A button that moves a pane of the chapter's debugger to the step this paragraph talks about. */
  | { kind: 'goto'; pane: number; label: string; find(events: readonly TraceEvent[]): number };

export interface LiveContent {
  /** May contain inline maths. */
  text: string;
  table?: { head: string[]; rows: string[][] };
}

/** One recorded run of the engine, as the lesson worker hands it to answer functions. */
export interface EngineRun {
  request: LoadRequest;
  events: readonly TraceEvent[];
  result: AlgorithmResult;
}

/** Hardware-model numbers, for chapters whose questions are about simulated kernel time. */
export interface HwRow {
  algorithm: string;
  gpu: string;
  features: Record<string, boolean | number>;
  timeUs: number;
  tflops: number;
  utilization: Record<string, number>;
  /** SMs that receive work, of smCount. */
  smsBusy: number;
  smCount: number;
}

export interface LessonContext {
  /** The run now loaded in the embedded debugger (the first pane of a compare view). */
  run: EngineRun;
  /** Runs another request with tracing on (same seed and inputs rule as the debugger). */
  runOther(req: LoadRequest): EngineRun;
  /** Runs the hardware model of the chapter's `hardware` table for one row of switches. */
  simulate(algorithm: string, gpu: string, features: Record<string, boolean | number>): HwRow;
}

export type AnswerValue = number | string;

export interface Question {
  id: string;
  /** May contain inline maths. */
  prompt: string;
  kind: 'integer' | 'number' | 'choice';
  choices?: { id: string; label: string }[];
  /** For 'number': accepted relative error (default 1e-3); absolute error 1e-6 is always accepted. */
  tolerance?: number;
  /**
   * 'counter': the answer is read off the Counters view, which rounds (4.1 k); a figure the
   * view would show the same way is accepted besides the exact one.
   */
  shownAs?: 'counter';
  /** Computed from the engine's state for the loaded problem — never hard-coded. */
  answer(ctx: LessonContext): AnswerValue;
  /** Why the answer is what it is, shown after a correct answer or when the student asks. */
  explain(ctx: LessonContext, answer: AnswerValue): string;
  /** Shown after a wrong answer, without giving the answer away. */
  hint: string;
}

/** A one-click change to the loaded problem and what to look for afterwards. */
export interface TryThis {
  label: string;
  /** What to watch; may contain inline maths. */
  look: string;
  change(req: LoadRequest): LoadRequest;
}

/** Where in the trace the chapter's text stands, resolved against the loaded run. */
export interface StepLocator {
  /** "the first rescale with a factor below 1", for the caption under the debugger. */
  describe: string;
  /** 0-based index into the run's events, −1 when this run has no such step (the preset always has it). */
  find(events: readonly TraceEvent[]): number;
  /** Where to stand instead when a changed problem or switch removes that step (FA3 without overlap has no overlapped P·V). */
  fallback?: { describe: string; find(events: readonly TraceEvent[]): number };
}

export interface PaneSpec {
  /** Label over the pane in a compare view. */
  label?: string;
  preset: LoadRequest;
  target: StepLocator;
  /** View ids (app/views/registry.ts) the pane opens with. */
  views: string[];
}

/** A hardware-model table the chapter shows live, one row per switch setting. */
export interface HardwareTable {
  caption: string;
  /** Problem shape of the simulated kernel (full size, not the stepping preset). */
  shapeNote: string;
  shape: ProblemShape;
  rows: { algorithm: string; gpu: string; features: Record<string, boolean | number>; label: string }[];
}

export interface Chapter {
  number: number;
  slug: string;
  title: string;
  /** One line for the table of contents. */
  summary: string;
  blocks: LessonBlock[];
  /** One pane, or two side by side (compare). */
  panes: PaneSpec[];
  /** Feature switches the chapter offers as live toggles on the first pane's problem. */
  toggles?: {
    feature: string;
    label: string;
    on: boolean | number;
    off: boolean | number;
    /** The value the kernel uses when the request does not set the feature. */
    kernelDefault: boolean | number;
    explain: string;
  }[];
  hardware?: HardwareTable;
  /** Algorithm ids whose kernel notes (switches, support table) the chapter folds in as reference. */
  reference?: string[];
  tryThis: TryThis[];
  questions: Question[];
  /**
   * Numbers the text quotes, computed by the engine when the chapter is shown: a text writes
   * `{{name}}` and the page fills in `facts(run).name`, so text and engine cannot drift.
   */
  facts?: (run: (req: LoadRequest) => EngineRun) => Record<string, string>;
  /** The chapter's sources footer: papers (title, arXiv id, section) and upstream files at a commit. */
  sources: string[];
}
