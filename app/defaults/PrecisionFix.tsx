// The one-click fixes for a low-precision dtype the chosen algorithm or pass cannot run
// (FP8 on fa2, FP8 on a backward, FP8 with a modifier FA3's FP8 kernel lacks): the engine
// is asked (engine/refusal.ts) and its refusal becomes buttons that change the
// form to something that runs, so picking an option never ends in a bare error.

import { ALGORITHMS, refusalOf, type Refusal, isFp8, type DType, hasBackward, type LoadRequest } from '../../engine/api.ts';
import { usePane } from '../store/pane-context.ts';
import { formToRequest, type ProblemForm } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { chooseAlgorithm, markTouched } from './form-defaults.ts';
import './defaults.css';

export interface PrecisionFix {
  label: string;
  /** A longer description (the algorithm's full name). */
  title?: string;
  apply: (pane: string) => void;
}

const set = (pane: string, patch: Partial<ProblemForm>) => {
  markTouched(pane, Object.keys(patch));
  const app = useApp.getState();
  app.setForm(pane, patch);
  // The refusal shown after a load attempt is answered by the fix.
  if (app.playback[pane]?.error?.place === 'problem') app.patchPlayback(pane, { error: undefined });
};

/** The engine's refusal of this form's low-precision problem, or null (fine, not FP8, or not yet a valid form). */
export function lowPrecisionRefusal(form: ProblemForm): Refusal | null {
  if (!isFp8(form.dtype)) return null;
  let req: LoadRequest;
  try {
    req = formToRequest({ ...form, pass: 'forward' });
  } catch {
    return null;
  }
  return refusalOf(form.algorithm, form.pass, req.problem, req.features);
}

/** Forward algorithms that run this dtype (asked of the engine on a tiny problem). */
function algorithmsFor(form: ProblemForm, dtype: DType): string[] {
  let req: LoadRequest;
  try {
    req = formToRequest({ ...form, pass: 'forward', dtype });
  } catch {
    return [];
  }
  return ALGORITHMS.map((a) => a.id).filter(
    (id) => id !== form.algorithm && refusalOf(id, 'forward', { ...req.problem, alibi: undefined, sinks: undefined }) === null,
  );
}

/** What to offer for a refusal: the fixes that keep the dtype first, then a 16-bit dtype. */
export function precisionFixes(form: ProblemForm, r: Refusal): PrecisionFix[] {
  const fixes: PrecisionFix[] = [];
  const dtype = form.dtype;
  if (r.field === 'dtype') {
    const forwardRuns =
      form.pass === 'backward' && refusalOf(form.algorithm, 'forward', formToRequest({ ...form, pass: 'forward' }).problem) === null;
    if (forwardRuns)
      fixes.push({
        label: `Step the forward pass (${form.algorithm}'s backward has no ${dtype} path)`,
        apply: (pane) => set(pane, { pass: 'forward' }),
      });
    else
      for (const id of algorithmsFor(form, dtype)) {
        fixes.push({
          label: `Run it on ${id}`,
          title: ALGORITHMS.find((a) => a.id === id)?.name,
          apply: (pane) => {
            chooseAlgorithm(pane, id);
            // The algorithm's defaults may bring its own dtype; the person asked for this one.
            set(pane, { dtype, ...(hasBackward(id) ? { pass: 'forward' } : {}) });
          },
        });
      }
  } else if (r.field === 'alibi') fixes.push({ label: 'Turn ALiBi off', apply: (pane) => set(pane, { alibi: false }) });
  else if (r.field === 'sinks') fixes.push({ label: 'Clear the sink logit', apply: (pane) => set(pane, { sink: '' }) });
  else if (r.field === 'attentionChunk')
    fixes.push({ label: 'Clear the attention chunk', apply: (pane) => set(pane, { attentionChunk: '' }) });
  else if (r.field === 'dv') fixes.push({ label: `Set dv to d (${form.d})`, apply: (pane) => set(pane, { dv: form.d }) });
  fixes.push({ label: 'Use bf16', apply: (pane) => set(pane, { dtype: 'bf16' }) });
  return fixes;
}

/** The line a load attempt shows instead of sending a problem the engine would refuse. */
export function refusedLoadMessage(form: ProblemForm): string {
  return `Not loaded: ${form.algorithm}${form.pass === 'backward' ? "'s backward" : ''} cannot run this ${form.dtype} problem as set; pick one of the fixes under the dtype.`;
}

/** Under the dtype: why this low-precision problem cannot run as set, and the fixes. */
export function PrecisionFitHint() {
  const { pane } = usePane();
  const form = useApp((s) => s.problem[pane].form);
  const refusal = lowPrecisionRefusal(form);
  if (!refusal) return null;
  const fixes = precisionFixes(form, refusal);
  return (
    <div className="fit-hint" role="status" data-testid="precision-hint">
      <p>{refusal.message}.</p>
      <div className="fix-buttons">
        {fixes.map((f) => (
          <button key={f.label} type="button" title={f.title} onClick={() => f.apply(pane)}>
            {f.label}
          </button>
        ))}
      </div>
    </div>
  );
}
