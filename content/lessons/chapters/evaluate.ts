// Everything the lesson worker computes: recorded runs, step targets, answer checks and
// hardware tables. Pure engine calls (Node and Worker); nothing here touches the DOM.

import {
  type LoadRequest,
  hwAlgorithmById,
  simulateFor,
  gpuById,
  randomInputs,
  validateProblem,
  startPass,
  type TraceEvent,
} from '../../../engine/api.ts';
import { sameCounterFigure } from '../../counter-figures.ts';
import { chapterByNumber } from './index.ts';
import type { AnswerValue, Chapter, EngineRun, HwRow, LessonContext, LiveContent, Question } from './types.ts';

/** Runs a request exactly as the debugger session does (same inputs, same options), keeping the events. */
export function runRequest(req: LoadRequest): EngineRun {
  const problem = validateProblem(structuredClone(req.problem));
  const inputs = randomInputs(problem, { seed: req.seed, distribution: req.distribution, outlierRow: req.outlierRow });
  const events: TraceEvent[] = [];
  // The forward or the backward, as the request's pass says (the same generator the debugger records).
  const gen = startPass(req, problem, inputs, { ...req.blocks, features: req.features, trace: true }).gen;
  let r = gen.next();
  for (; !r.done; r = gen.next()) events.push(r.value);
  return { request: structuredClone(req), events, result: r.value };
}

/** Recent runs by request, so checking three questions runs the engine once. */
export class RunCache {
  private map = new Map<string, EngineRun>();
  constructor(private readonly capacity = 6) {}
  get(req: LoadRequest): EngineRun {
    const key = JSON.stringify(req);
    let r = this.map.get(key);
    if (r) {
      this.map.delete(key);
    } else r = runRequest(req);
    this.map.set(key, r);
    while (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as string);
    return r;
  }
}

const hwCache = new Map<string, HwRow>();

export function simulateRow(chapter: Chapter, algorithm: string, gpu: string, features: Record<string, boolean | number>): HwRow {
  if (!chapter.hardware) throw new Error(`chapter ${chapter.number} has no hardware table`);
  const key = JSON.stringify([chapter.hardware.shape, algorithm, gpu, features]);
  const hit = hwCache.get(key);
  if (hit) return hit;
  hwAlgorithmById(algorithm);
  const r = simulateFor(algorithm, gpu, chapter.hardware.shape, features);
  const row: HwRow = {
    algorithm,
    gpu,
    features,
    timeUs: r.time_us,
    tflops: r.tflops,
    utilization: r.utilization,
    smsBusy: r.sms_busy,
    smCount: gpuById(gpu).smCount,
  };
  hwCache.set(key, row);
  return row;
}

export function hardwareTable(chapter: Chapter): (HwRow & { label: string })[] {
  return (chapter.hardware?.rows ?? []).map((r) => ({ ...simulateRow(chapter, r.algorithm, r.gpu, r.features), label: r.label }));
}

export function lessonContext(chapter: Chapter, req: LoadRequest, cache: RunCache): LessonContext {
  return {
    run: cache.get(req),
    runOther: (r) => cache.get(r),
    simulate: (a, g, f) => simulateRow(chapter, a, g, f),
  };
}

export function needChapter(n: number): Chapter {
  const c = chapterByNumber(n);
  if (!c) throw new Error(`there is no chapter ${n}`);
  return c;
}

export interface TargetStep {
  step: number;
  total: number;
  /** What stands at `step`: the chapter's own description, its fallback's, or why neither applies. */
  describe: string;
  exact: boolean;
}

/** Where a pane's target step is for the loaded request. */
export function locateTarget(chapter: Chapter, pane: number, req: LoadRequest, cache: RunCache): TargetStep {
  const spec = chapter.panes[pane];
  if (!spec) throw new Error(`chapter ${chapter.number} has no pane ${pane}`);
  const run = cache.get(req);
  const total = run.events.length;
  const i = spec.target.find(run.events);
  if (i >= 0) return { step: i, total, describe: spec.target.describe, exact: true };
  const f = spec.target.fallback;
  const j = f ? f.find(run.events) : -1;
  if (f && j >= 0) return { step: j, total, describe: f.describe, exact: false };
  return {
    step: 0,
    total,
    describe: `this problem has no step matching "${spec.target.describe}", so the debugger stays at the start`,
    exact: false,
  };
}

/** Where a 'goto' block of the text points in the loaded run; step −1 when this problem has no such step. */
export function locateBlock(chapter: Chapter, block: number, req: LoadRequest, cache: RunCache): { step: number; total: number } {
  const b = chapter.blocks[block];
  if (b?.kind !== 'goto') throw new Error(`chapter ${chapter.number} has no step link at block ${block}`);
  const run = cache.get(req);
  return { step: b.find(run.events), total: run.events.length };
}

/** The engine-computed text of a 'live' block. */
export function liveBlock(chapter: Chapter, block: number, cache: RunCache): LiveContent {
  const b = chapter.blocks[block];
  if (b?.kind !== 'live') throw new Error(`chapter ${chapter.number} has no computed text at block ${block}`);
  return b.compute((r) => cache.get(r));
}

/** The numbers a chapter's text quotes, from the engine ({} when its text quotes none). */
export function chapterFacts(chapter: Chapter, cache: RunCache): Record<string, string> {
  return chapter.facts ? chapter.facts((r) => cache.get(r)) : {};
}

/** Bytes per unit a figure may carry, as the Counters view writes it (2.0 kB) or in powers of two (2 KiB). */
const BYTE_UNITS: Record<string, number> = {
  b: 1,
  k: 1e3,
  kb: 1e3,
  kib: 1024,
  m: 1e6,
  mb: 1e6,
  mib: 1024 ** 2,
  g: 1e9,
  gb: 1e9,
  gib: 1024 ** 3,
};

/** A byte figure with its unit ("2.0kB", "2KiB", "512B"), in whole bytes; undefined for anything else. */
function byteFigure(t: string): number | undefined {
  const m = /^([0-9.]+(?:e[+-]?\d+)?)([kmg]i?b|[kmgb])$/i.exec(t);
  const unit = m && BYTE_UNITS[m[2].toLowerCase()];
  const n = m ? Number(m[1]) * (unit ?? Number.NaN) : Number.NaN;
  return Number.isFinite(n) ? Math.round(n) : undefined;
}

/** What the student typed, as the question's kind of value, or a message saying what is expected. */
export function parseAnswer(q: Question, text: string): { value: AnswerValue } | { error: string } {
  const t = text
    .trim()
    .replace(/\u2212/g, '-')
    .replace(/\s+/g, '');
  if (q.kind === 'choice') {
    if (!q.choices?.some((c) => c.id === text)) return { error: 'Pick one of the options.' };
    return { value: text };
  }
  if (t === '') return { error: 'Type a number first.' };
  const bytes = q.shownAs === 'counter' ? byteFigure(t) : undefined;
  if (bytes !== undefined) return { value: bytes };
  const n = Number(t);
  if (!Number.isFinite(n)) return { error: `"${text.trim()}" is not a number.` };
  if (q.kind === 'integer' && !Number.isInteger(n)) return { error: 'The answer is a whole number.' };
  return { value: n };
}

export function isCorrect(q: Question, given: AnswerValue, expected: AnswerValue): boolean {
  if (q.shownAs === 'counter' && typeof given === 'number' && typeof expected === 'number') return sameCounterFigure(given, expected);
  if (q.kind !== 'number') return given === expected;
  const g = Number(given);
  const e = Number(expected);
  if (!Number.isFinite(e)) return false;
  return Math.abs(g - e) <= 1e-6 || Math.abs(g - e) <= (q.tolerance ?? 1e-3) * Math.abs(e);
}

export interface CheckResult {
  verdict: 'correct' | 'wrong' | 'invalid';
  message: string;
  /** Present with verdict 'correct' or when revealed. */
  explanation?: string;
}

export function checkAnswer(chapter: Chapter, qid: string, req: LoadRequest, text: string, cache: RunCache): CheckResult {
  const q = chapter.questions.find((x) => x.id === qid);
  if (!q) throw new Error(`chapter ${chapter.number} has no question '${qid}'`);
  const parsed = parseAnswer(q, text);
  if ('error' in parsed) return { verdict: 'invalid', message: parsed.error };
  const ctx = lessonContext(chapter, req, cache);
  const expected = q.answer(ctx);
  if (isCorrect(q, parsed.value, expected)) return { verdict: 'correct', message: 'Correct.', explanation: q.explain(ctx, expected) };
  return { verdict: 'wrong', message: `Not quite. ${q.hint}` };
}

export function revealAnswer(chapter: Chapter, qid: string, req: LoadRequest, cache: RunCache): { answer: string; explanation: string } {
  const q = chapter.questions.find((x) => x.id === qid);
  if (!q) throw new Error(`chapter ${chapter.number} has no question '${qid}'`);
  const ctx = lessonContext(chapter, req, cache);
  const a = q.answer(ctx);
  const label =
    q.kind === 'choice'
      ? (q.choices?.find((c) => c.id === a)?.label ?? String(a))
      : typeof a === 'number' && !Number.isInteger(a)
        ? String(Number(a.toPrecision(6)))
        : String(a);
  return { answer: label, explanation: q.explain(ctx, a) };
}
