// Whether the problem form describes a run other than the one loaded: the views keep
// showing the loaded run until "Load problem", so the pane says a load is pending.

import type { LoadRequest } from '../../engine/api.ts';
import { formToRequest, withAppliedFeatures, type ProblemForm } from '../store/problem-form.ts';

/** JSON with sorted object keys, so two equal requests built in different orders compare equal. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/** What decides the trace, less the person's files (their shapes come from the files, not the form). */
function runKey(r: LoadRequest): string {
  const { tensors, problem, ...rest } = r;
  return canonical({ ...rest, pass: rest.pass ?? 'forward', problem: tensors ? undefined : problem });
}

/** The last answer: store selectors ask on every state change, and the form and the run change far less often. */
let last: { form: ProblemForm; applied: LoadRequest; differs: boolean } | undefined;

/** True when loading the form would give another run than `applied`; an unreadable form counts as changed. */
export function formDiffersFromRun(form: ProblemForm, applied: LoadRequest | undefined): boolean {
  if (!applied) return false;
  if (last && last.form === form && last.applied === applied) return last.differs;
  let differs: boolean;
  try {
    differs = runKey(withAppliedFeatures(formToRequest(form, applied), applied)) !== runKey(applied);
  } catch {
    differs = true;
  }
  last = { form, applied, differs };
  return differs;
}
