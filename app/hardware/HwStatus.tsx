// The line every hardware view starts with: which SM is drawn, and where the debugger's
// step is on it (the op whose end is the cursor), or why nothing is drawn.

import type { HwView } from '../../engine/api.ts';
import { usePane } from '../store/pane-context.ts';
import { grouped } from './format.ts';
import { useApp } from '../store/store.ts';
import { useHwPane } from '../store/hw-store.ts';
import { LoadedFitFix } from '../defaults/FitFix.tsx';

export interface Cursor {
  cycle: number;
  /** 'op': the step's own op; 'approx': a stand-in phase; 'before': an earlier step's op (this step has none here). */
  how: 'op' | 'approx' | 'before';
  op: number;
}

/** The cursor of `step` on the view's SM (see engine/hw/step-map.ts for the rule). */
export function cursorOf(view: HwView, step: number): Cursor {
  const { stepCycle, stepOp, stepApprox } = view.map;
  if (step < stepCycle.length && !Number.isNaN(stepCycle[step]))
    return { cycle: stepCycle[step], how: stepApprox[step] ? 'approx' : 'op', op: stepOp[step] };
  for (let k = Math.min(step, stepCycle.length - 1); k >= 0; k--)
    if (!Number.isNaN(stepCycle[k])) return { cycle: stepCycle[k], how: 'before', op: stepOp[k] };
  return { cycle: 0, how: 'before', op: -1 };
}

export function useCursor(view: HwView | undefined, step: number): number | null {
  return view ? cursorOf(view, step).cycle : null;
}

export function HwStatus() {
  const { pane } = usePane();
  const view = useHwPane(pane, (s) => s.view);
  const error = useHwPane(pane, (s) => s.error);
  const loading = useHwPane(pane, (s) => s.loading);
  const frame = useApp((s) => s.playback[pane].frame);
  if (error)
    return (
      <>
        <p className="error" role="alert" data-testid="hw-error">
          No hardware schedule for this problem: {error}
        </p>
        <LoadedFitFix />
      </>
    );
  if (!view || !frame)
    return <p className="dim">{loading ? 'Building the hardware schedule in the worker…' : 'No hardware schedule yet.'}</p>;
  const c = cursorOf(view, frame.step);
  const t = view.timeline;
  const opText = c.op >= 0 ? `${t.strings[t.op[c.op]]} (${view.roles[t.role[c.op]]?.name})` : '—';
  const ctas = view.ctas
    .map((x) =>
      x.keys
        ? `b${x.b} h${x.h} keys ${x.keys[0]}–${x.keys[1] - 1}, rows ${x.rows[0]}–${x.rows[1] - 1}`
        : `b${x.b} h${x.h} rows ${x.rows[0]}–${x.rows[1] - 1}${x.split ? ` split ${x.split}` : ''}`,
    )
    .join('; ');
  return (
    <p className="hw-status" data-testid="hw-status" data-cycle={Math.round(c.cycle)} data-how={c.how}>
      <span>
        {view.gpuName} ·{' '}
        {view.resources.cta_group === 2 ? 'two SMs running CTA pair' : `one SM running CTA${view.ctas.length > 1 ? 's' : ''}`}{' '}
        {view.firstCta + 1}
        {view.ctas.length > 1 ? `–${view.firstCta + view.ctas.length}` : ''} of {view.gridCtas} ({ctas}) ·{' '}
        {grouped(Math.round(view.cycles))} cycles
      </span>
      <br />
      <span>
        Step {frame.step + 1} ({frame.event.kind}) →{' '}
        {c.how === 'op' ? (
          <>
            ends with <b>{opText}</b> at cycle {grouped(Math.round(c.cycle))}
          </>
        ) : c.how === 'approx' ? (
          <>
            the kernel folds this phase into <b>{opText}</b>, done at cycle {grouped(Math.round(c.cycle))}
          </>
        ) : frame.event.kind === 'combine' ? (
          <>the combine kernel, launched after this one (cursor left at the last step of this SM)</>
        ) : frame.event.kind === 'dsum' || frame.event.kind === 'dqconvert' ? (
          <>
            {frame.event.kind === 'dsum'
              ? 'the preprocessing kernel, launched before this one'
              : 'the dQ conversion kernel, launched after this one'}{' '}
            (cursor left at cycle {grouped(Math.round(c.cycle))})
          </>
        ) : (
          <>no op of this SM (cursor left at cycle {grouped(Math.round(c.cycle))}, the last step that has one)</>
        )}
        {loading ? ' · updating…' : ''}
      </span>
    </p>
  );
}
