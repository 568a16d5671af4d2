// Reading RunOptions.features for the algorithms that model a real kernel. Each algorithm
// declares its switches with their defaults; anything else is rejected by name, so a typo
// in the UI or on the CLI never silently runs the default schedule.

import { ProblemError, type DType } from '../core/problem.ts';

/** Every switch's value as a run takes it, by key. */
export type SwitchValues = Record<string, boolean | number>;

/**
 * One switch of an algorithm, as the engine reads it and as every view shows it: the problem
 * panel, the compare panes, the hardware timeline and the CLI all take label and help from here.
 */
export interface FeatureSpec<T extends boolean | number> {
  default: T;
  /** For numeric features: a message when the value is out of range, undefined when fine. */
  check?: (v: number) => string | undefined;
  /** One line for errors, tooltips and lessons. */
  doc: string;
  /** What the views call it; the key when absent. */
  label?: string;
  /** The input dtypes it acts on (absent: all); with another dtype it is shown disabled and never sent. */
  dtypes?: readonly DType[];
  /** Why another dtype cannot take it, shown after "needs dtype …". */
  dtypeWhy?: string;
  /** The problem panel offers it: it changes the numbers or the steps of a run, so it is set before loading. */
  panel?: boolean;
  /** A numeric switch that takes only these values (shown as a select). */
  choices?: readonly number[];
  /** Why it does not apply with these values of the algorithm's other switches; undefined when it does. */
  inactive?: (values: SwitchValues) => string | undefined;
}

export type FeatureSpecs = Record<string, FeatureSpec<boolean> | FeatureSpec<number>>;
export type FeatureValues<S extends FeatureSpecs> = { [K in keyof S]: S[K]['default'] };

export function readFeatures<S extends FeatureSpecs>(
  algorithm: string,
  specs: S,
  given: Record<string, boolean | number> | undefined,
): FeatureValues<S> {
  const out: Record<string, boolean | number> = {};
  for (const [k, s] of Object.entries(specs)) out[k] = s.default;
  const accepted = Object.keys(specs);
  for (const [k, v] of Object.entries(given ?? {})) {
    const spec = specs[k];
    if (!spec) {
      throw new ProblemError(
        'features',
        `unknown feature '${k}' for ${algorithm}; accepted: ${accepted.length ? accepted.join(', ') : '(none)'}`,
      );
    }
    if (typeof spec.default === 'boolean') {
      if (typeof v !== 'boolean') throw new ProblemError(`features.${k}`, `${algorithm} expects true or false, got ${String(v)}`);
    } else {
      if (typeof v !== 'number' || !Number.isFinite(v)) {
        throw new ProblemError(`features.${k}`, `${algorithm} expects a number, got ${String(v)}`);
      }
      const msg = (spec as FeatureSpec<number>).check?.(v);
      if (msg) throw new ProblemError(`features.${k}`, msg);
    }
    out[k] = v;
  }
  return out as FeatureValues<S>;
}

export const positiveInteger = (v: number): string | undefined =>
  Number.isInteger(v) && v > 0 ? undefined : `must be a positive integer, got ${v}`;
