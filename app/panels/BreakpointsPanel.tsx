// Breakpoints: add one of five kinds, toggle or remove them, run to the next one.

import { useState } from 'react';
import { describeBreakpoint, type Breakpoint, type BreakpointSpec, type PhaseKind } from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';

const PHASES: PhaseKind[] = ['load', 'qk', 'mask', 'rowmax', 'exp', 'rowsum', 'rescale', 'pv', 'normalize', 'write', 'combine', 'skip'];
/** The backward's phases (load, qk, mask and write are shared with the forward). */
const BACKWARD_PHASES: PhaseKind[] = ['load', 'dsum', 'qk', 'mask', 'recompute', 'dv', 'dp', 'ds', 'dq', 'dk', 'dqconvert', 'write'];
type Kind = BreakpointSpec['kind'];

let nextId = 1;

export function BreakpointsPanel() {
  const { pane, ctl } = usePane();
  const list = useApp((s) => s.breakpoints[pane]);
  const status = useApp((s) => s.playback[pane].status);
  const hit = useApp((s) => s.playback[pane].hit);
  const error = useApp((s) => s.playback[pane].error);
  const backward = useApp((s) => s.playback[pane].summary?.pass === 'backward');
  const [kind, setKind] = useState<Kind>('tile');
  const [a, setA] = useState('0');
  const [b, setB] = useState('0');
  const [phase, setPhase] = useState<PhaseKind>('rescale');
  const [formError, setFormError] = useState('');
  const phases = backward ? BACKWARD_PHASES : PHASES;
  // A phase picked for the other pass falls back to the first of this pass's list.
  const shownPhase = phases.includes(phase) ? phase : phases[0];
  const shownKind = !backward && (kind === 'grad-nonfinite' || kind === 'ds-above') ? 'tile' : kind;

  const add = () => {
    const n = (v: string, what: string, allowFrac = false) => {
      const x = Number(v);
      if (v.trim() === '' || !Number.isFinite(x) || (!allowFrac && !Number.isInteger(x)) || x < 0)
        throw new Error(`${what} must be a ${allowFrac ? 'number' : 'whole number'} ≥ 0, got "${v}"`);
      return x;
    };
    try {
      let spec: BreakpointSpec;
      const kind = shownKind;
      if (kind === 'tile') spec = { kind, qBlock: n(a, 'Q block'), kvBlock: n(b, 'K/V block') };
      else if (kind === 'rescale-row') spec = { kind, row: n(a, 'Row') };
      else if (kind === 'm-jump') spec = { kind, threshold: n(a, 'Threshold', true) };
      else if (kind === 'phase') spec = { kind, phase: shownPhase };
      else if (kind === 'ds-above') spec = { kind, threshold: n(a, 'Threshold', true) };
      else if (kind === 'grad-nonfinite') spec = { kind };
      else spec = { kind: 'nonfinite' };
      setFormError('');
      void ctl.setBreakpoints([...list, { ...spec, id: `bp${nextId++}`, enabled: true } as Breakpoint]);
    } catch (e) {
      setFormError((e as Error).message);
    }
  };

  return (
    <section className="panel breakpoints" aria-label="Breakpoints">
      <h2>Breakpoints</h2>
      <div className="bp-form">
        <select aria-label="Breakpoint kind" value={shownKind} onChange={(e) => setKind(e.target.value as Kind)}>
          <option value="tile">on tile (i, j)</option>
          <option value="rescale-row">on a rescale in row r</option>
          <option value="nonfinite">on the first NaN/Inf</option>
          <option value="m-jump">on m growing by more than</option>
          <option value="phase">on a phase kind</option>
          {backward && <option value="grad-nonfinite">on the first NaN/Inf in a gradient</option>}
          {backward && <option value="ds-above">on |dS| above</option>}
        </select>
        {shownKind === 'tile' && (
          <>
            <input aria-label="Q block i" value={a} onChange={(e) => setA(e.target.value)} size={3} />
            <input aria-label="K/V block j" value={b} onChange={(e) => setB(e.target.value)} size={3} />
          </>
        )}
        {shownKind === 'rescale-row' && <input aria-label="Row r" value={a} onChange={(e) => setA(e.target.value)} size={4} />}
        {(shownKind === 'm-jump' || shownKind === 'ds-above') && (
          <input aria-label="Threshold" value={a} onChange={(e) => setA(e.target.value)} size={4} />
        )}
        {shownKind === 'phase' && (
          <select aria-label="Phase kind" value={shownPhase} onChange={(e) => setPhase(e.target.value as PhaseKind)}>
            {phases.map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        )}
        <button type="button" onClick={add}>
          Add breakpoint
        </button>
      </div>
      {formError && (
        <p className="error" role="alert">
          {formError}
        </p>
      )}
      <ul className="bp-list" aria-label="Breakpoint list">
        {list.map((bp) => (
          <li key={bp.id} className={hit?.id === bp.id ? 'hit' : undefined}>
            <label>
              <input
                type="checkbox"
                checked={bp.enabled}
                onChange={() => void ctl.setBreakpoints(list.map((x) => (x.id === bp.id ? { ...x, enabled: !x.enabled } : x)))}
              />{' '}
              {describeBreakpoint(bp)}
            </label>
            <button
              type="button"
              aria-label={`Remove breakpoint ${describeBreakpoint(bp)}`}
              onClick={() => void ctl.setBreakpoints(list.filter((x) => x.id !== bp.id))}
            >
              ✕
            </button>
          </li>
        ))}
        {list.length === 0 && <li className="dim">None set.</li>}
      </ul>
      <div className="row-buttons">
        <button type="button" onClick={() => void ctl.runToBreakpoint()} disabled={status !== 'ready'}>
          Run to next breakpoint
        </button>
        {status === 'busy' && (
          <button type="button" onClick={() => ctl.cancel()}>
            Cancel
          </button>
        )}
      </div>
      {error?.place === 'breakpoints' && (
        <p className="error" role="alert">
          {error.message}
        </p>
      )}
    </section>
  );
}
