// "Forward | Backward": on the problem panel, for the algorithms that have a backward pass,
// and (app/compare/ComparePassSwitch.tsx) in compare mode's bar. Choosing a pass loads
// it at once (the transport, breakpoints and share link then follow the loaded pass); a
// form that cannot be loaded keeps its values and says which field is wrong.

import './backward.css';
import { useRef, type KeyboardEvent } from 'react';
import { hasBackward, PASSES, type LoadRequest, type Pass } from '../../engine/api.ts';
import { formToRequest, withAppliedFeatures } from '../store/problem-form.ts';
import { lowPrecisionRefusal, refusedLoadMessage } from '../defaults/PrecisionFix.tsx';
import { choosePass } from '../defaults/form-defaults.ts';
import { useApp, type PaneId } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import type { PaneController } from '../store/pane-controller.ts';
import { withImported } from '../import/import-store.ts';

const LABEL: Record<Pass, string> = { forward: 'Forward', backward: 'Backward' };

export function PassRadios({
  value,
  disabled,
  onChoose: choose,
  label,
}: {
  value: Pass;
  disabled: boolean;
  onChoose: (p: Pass) => void;
  label: string;
}) {
  const refs = useRef<(HTMLButtonElement | null)[]>([]);
  // Marked, not disabled, while a run loads: a disabled button would drop the keyboard focus.
  const onChoose = (p: Pass) => {
    if (!disabled) choose(p);
  };
  // Arrow keys move between the two, as in any radio group (and do not step the debugger).
  const onKey = (e: KeyboardEvent, i: number) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    e.preventDefault();
    e.stopPropagation();
    const next = (i + (e.key === 'ArrowRight' ? 1 : PASSES.length - 1)) % PASSES.length;
    refs.current[next]?.focus();
    onChoose(PASSES[next]);
  };
  return (
    <div className="pass-switch" role="radiogroup" aria-label={label}>
      {PASSES.map((p, i) => (
        // biome-ignore lint/a11y/useSemanticElements: a segmented button row in the ARIA radio-group pattern (roving tabindex, arrow keys)
        <button
          key={p}
          ref={(el) => {
            refs.current[i] = el;
          }}
          type="button"
          role="radio"
          aria-checked={value === p}
          tabIndex={value === p ? 0 : -1}
          className={value === p ? 'on' : undefined}
          aria-disabled={disabled}
          onClick={() => onChoose(p)}
          onKeyDown={(e) => onKey(e, i)}
        >
          {LABEL[p]}
        </button>
      ))}
    </div>
  );
}

/** Sets the pane's form to `pass` and loads it; a form error is shown next to the form. */
export function loadPass(pane: PaneId, ctl: PaneController, pass: Pass): void {
  const st = useApp.getState();
  choosePass(pane, pass);
  let req: LoadRequest;
  try {
    req = formToRequest(useApp.getState().problem[pane].form, useApp.getState().problem[pane].applied);
  } catch (e) {
    st.patchPlayback(pane, { error: { place: 'problem', message: (e as Error).message } });
    return;
  }
  // A dtype this pass cannot run (FP8 on a backward): the hint under the dtype has the fixes.
  const form = useApp.getState().problem[pane].form;
  if (lowPrecisionRefusal(form)) {
    st.patchPlayback(pane, { error: { place: 'problem', message: refusedLoadMessage(form) } });
    return;
  }
  const applied = st.problem[pane].applied;
  void ctl.load(withImported(pane, withAppliedFeatures(req, applied)));
}

export function PassSwitch() {
  const { pane, ctl } = usePane();
  const algorithm = useApp((s) => s.problem[pane].form.algorithm);
  const pass = useApp((s) => s.problem[pane].form.pass);
  const loaded = useApp((s) => s.problem[pane].applied?.pass ?? 'forward');
  const status = useApp((s) => s.playback[pane].status);
  if (!hasBackward(algorithm)) return null;
  const busy = status === 'loading' || status === 'busy';
  return (
    <div className="pass-row">
      <PassRadios value={pass} disabled={busy} onChoose={(p) => loadPass(pane, ctl, p)} label="Pass" />
      {pass !== loaded && !busy && <span className="dim"> loaded: {LABEL[loaded]}</span>}
    </div>
  );
}
