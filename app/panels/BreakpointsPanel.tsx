// Breakpoints: add one of five kinds, toggle or remove them, run to the next one.

import { useState } from 'react';
import { describeBreakpoint } from '../../engine/debugger/breakpoints.ts';
import type { Breakpoint, BreakpointSpec } from '../../engine/debugger/protocol.ts';
import type { PhaseKind } from '../../engine/trace/events.ts';
import { useApp } from '../store/store.ts';
import { usePane } from '../pane/context.ts';

const PHASES: PhaseKind[] = ['load', 'qk', 'mask', 'rowmax', 'exp', 'rowsum', 'rescale', 'pv', 'normalize', 'write', 'combine'];
type Kind = BreakpointSpec['kind'];

let nextId = 1;

export function BreakpointsPanel() {
  const { pane, ctl } = usePane();
  const list = useApp((s) => s.breakpoints[pane]);
  const status = useApp((s) => s.playback[pane].status);
  const hit = useApp((s) => s.playback[pane].hit);
  const error = useApp((s) => s.playback[pane].error);
  const [kind, setKind] = useState<Kind>('tile');
  const [a, setA] = useState('0');
  const [b, setB] = useState('0');
  const [phase, setPhase] = useState<PhaseKind>('rescale');
  const [formError, setFormError] = useState('');

  const add = () => {
    const n = (v: string, what: string, allowFrac = false) => {
      const x = Number(v);
      if (v.trim() === '' || !Number.isFinite(x) || (!allowFrac && !Number.isInteger(x)) || x < 0) throw new Error(`${what} must be a ${allowFrac ? 'number' : 'whole number'} ≥ 0, got "${v}"`);
      return x;
    };
    try {
      let spec: BreakpointSpec;
      if (kind === 'tile') spec = { kind, qBlock: n(a, 'Q block'), kvBlock: n(b, 'K/V block') };
      else if (kind === 'rescale-row') spec = { kind, row: n(a, 'Row') };
      else if (kind === 'm-jump') spec = { kind, threshold: n(a, 'Threshold', true) };
      else if (kind === 'phase') spec = { kind, phase };
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
        <select aria-label="Breakpoint kind" value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
          <option value="tile">on tile (i, j)</option>
          <option value="rescale-row">on a rescale in row r</option>
          <option value="nonfinite">on the first NaN/Inf</option>
          <option value="m-jump">on m growing by more than</option>
          <option value="phase">on a phase kind</option>
        </select>
        {kind === 'tile' && (
          <>
            <input aria-label="Q block i" value={a} onChange={(e) => setA(e.target.value)} size={3} />
            <input aria-label="K/V block j" value={b} onChange={(e) => setB(e.target.value)} size={3} />
          </>
        )}
        {kind === 'rescale-row' && <input aria-label="Row r" value={a} onChange={(e) => setA(e.target.value)} size={4} />}
        {kind === 'm-jump' && <input aria-label="Threshold" value={a} onChange={(e) => setA(e.target.value)} size={4} />}
        {kind === 'phase' && (
          <select aria-label="Phase kind" value={phase} onChange={(e) => setPhase(e.target.value as PhaseKind)}>
            {PHASES.map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        )}
        <button onClick={add}>Add breakpoint</button>
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
            <button aria-label={`Remove breakpoint ${describeBreakpoint(bp)}`} onClick={() => void ctl.setBreakpoints(list.filter((x) => x.id !== bp.id))}>
              ✕
            </button>
          </li>
        ))}
        {list.length === 0 && <li className="dim">None set.</li>}
      </ul>
      <div className="row-buttons">
        <button onClick={() => void ctl.runToBreakpoint()} disabled={status !== 'ready'}>
          Run to next breakpoint
        </button>
        {status === 'busy' && <button onClick={() => ctl.cancel()}>Cancel</button>}
      </div>
      {error?.place === 'breakpoints' && (
        <p className="error" role="alert">
          {error.message}
        </p>
      )}
    </section>
  );
}
