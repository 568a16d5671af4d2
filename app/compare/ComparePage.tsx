// Compare mode: 2 to 4 panes over the same problem and inputs, stepped together along the
// axis the person picks, with the difference table and output difference below.

import { useEffect } from 'react';
import { SYNC_AXES, type SyncAxis } from '../../engine/api.ts';
import { useImport } from '../import/import-store.ts';
import { useApp } from '../store/store.ts';
import { useCompare } from './compare-store.ts';
import { ComparePane } from './ComparePane.tsx';
import { controllers } from '../store/controllers.ts';
import { DiffPanel } from './DiffPanel.tsx';
import { MAX_PANES, MIN_PANES } from './pane-config.ts';
import { SHARED_PANE } from './shared-request.ts';
import { startSyncDriver } from './sync-driver.ts';
import { kvOrderNote } from './kv-order.ts';
import { ComparePassSwitch } from './ComparePassSwitch.tsx';
import { SharedInputs } from './SharedInputs.tsx';
import { paneRefusal } from './pane-dtype.ts';
import { applyPreset, PRESETS } from './presets.ts';

const AXIS_LABEL: Record<SyncAxis, string> = { kv: 'K/V block', progress: 'normalised progress', time: 'simulated time', none: 'unlinked' };

function isTyping(t: EventTarget | null): boolean {
  return (
    t instanceof HTMLElement &&
    (t.tagName === 'SELECT' ||
      t.tagName === 'TEXTAREA' ||
      (t.tagName === 'INPUT' && !['checkbox', 'radio', 'range', 'button'].includes((t as HTMLInputElement).type)))
  );
}

function SharedProblem() {
  const applied = useApp((s) => s.problem[SHARED_PANE]?.applied);
  const imported = useImport((s) => s.imported[SHARED_PANE]);
  if (!applied) return <span className="dim">The shared problem is loading in the Single tab…</span>;
  const p = applied.problem;
  return (
    <span data-testid="shared-problem">
      Shared problem: B={p.batch} Hq={p.hq} Hk={p.hk} Nq={p.nq} Nk={p.nk} d={p.d} dv={p.dv} {p.dtype}
      {p.causal ? ' causal' : ''}
      {/* The modifiers some paths lack (FA3's FP8 path: ALiBi, sinks; all but fa3 and standard: the chunk), so a pane's refusal can be read against them. */}
      {p.attentionChunk !== undefined ? `, attention chunk ${p.attentionChunk}` : ''}
      {p.alibi ? ', ALiBi' : ''}
      {p.sinks ? `, sink logit ${p.sinks[0]}` : ''}
      {p.softcap !== undefined ? `, softcap ${p.softcap}` : ''}
      {applied.pass === 'backward' ? ', backward pass' : ''}
      {imported ? `, inputs from ${imported.label}` : `, seed ${applied.seed} (${applied.distribution})`}
      <span className="dim"> — change it in the Single tab</span>
    </span>
  );
}

export function ComparePage() {
  const panes = useCompare((s) => s.panes);
  const axis = useCompare((s) => s.axis);
  const setAxis = useCompare((s) => s.setAxis);
  const syncNotice = useCompare((s) => s.syncNotice);
  const results = useCompare((s) => s.results);
  const gpu = useCompare((s) => s.gpu);
  const applying = useCompare((s) => s.applying);
  const backward = useApp((s) => s.problem[SHARED_PANE]?.applied?.pass === 'backward');

  useEffect(() => startSyncDriver(), []);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const active = useApp.getState().layout.activePane;
      const c = controllers.get(active);
      if (!active.startsWith('cmp') || !c || isTyping(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
      // A pane refused for its dtype shows no run: its worker's previous run must not move unseen.
      const cfg = useCompare.getState().panes[Number(active.slice(3))];
      if (cfg && paneRefusal(cfg, useApp.getState().problem[SHARED_PANE]?.applied)) return;
      if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
        e.preventDefault();
        void c.step(e.key === 'ArrowRight' ? 1 : -1, e.shiftKey ? 'inner' : 'phase');
      } else if (e.key === 'Home') {
        e.preventDefault();
        void c.seek(0);
      } else if (e.key === 'End') {
        e.preventDefault();
        void c.seek(Number.MAX_SAFE_INTEGER);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const kvNote = axis === 'kv' && !backward ? kvOrderNote(panes) : undefined;
  const noTimeline =
    axis === 'time' ? results.map((r, i) => (r && !r.hasTimeline ? `pane ${i + 1}: ${r.timelineReason}` : '')).filter(Boolean) : [];

  return (
    <div className="compare">
      <div className="compare-bar" role="toolbar" aria-label="Compare settings">
        <SharedProblem />
        <SharedInputs />
        <ComparePassSwitch shared={SHARED_PANE} ctl={controllers.get(SHARED_PANE)} />
        {PRESETS.map((p) => (
          <button key={p.id} type="button" disabled={applying} title={p.about} onClick={() => void applyPreset(p)}>
            Preset: {p.name}
          </button>
        ))}
        <label className="field">
          <span>Sync by</span>
          <select aria-label="Sync axis" value={axis} onChange={(e) => setAxis(e.target.value as SyncAxis)}>
            {SYNC_AXES.map((a) => (
              <option key={a} value={a}>
                {AXIS_LABEL[a]}
              </option>
            ))}
          </select>
        </label>
        <button type="button" disabled={panes.length >= MAX_PANES} onClick={() => useCompare.getState().addPane()}>
          Add pane
        </button>
        <button type="button" disabled={panes.length <= MIN_PANES} onClick={() => useCompare.getState().removePane()}>
          Remove pane
        </button>
      </div>
      {noTimeline.length > 0 && (
        <p className="banner" role="status" data-testid="time-fallback">
          No hardware schedule on {gpu.toUpperCase()} for {noTimeline.join('; ')}. Those panes follow by normalised progress.
        </p>
      )}
      {kvNote && (
        <p className="banner dim" role="status" data-testid="kv-order-note">
          {kvNote}
        </p>
      )}
      {syncNotice && noTimeline.length === 0 && (
        <p className="banner" role="status">
          {syncNotice}
        </p>
      )}
      <div className={`compare-grid n${panes.length}`}>
        {panes.map((_, i) => (
          <ComparePane key={i} index={i} />
        ))}
      </div>
      <DiffPanel />
    </div>
  );
}
