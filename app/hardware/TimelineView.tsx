// The warp-role timeline of the SM running the current step, with the kernel's switches
// (re-run in the worker), the GPU, per-unit utilization of the visible window and export.

import { useEffect, useRef, useState } from 'react';
import { hasHardwareModel, type HwFeatures, type HwExportFormat, type HwView, stepForClick } from '../../engine/api.ts';
import { messageOf } from '../store/pane-controller.ts';
import { usePane } from '../store/pane-context.ts';
import { useApp } from '../store/store.ts';
import { choiceKey, defaultGpu, gpusFor } from '../store/gpus.ts';
import { hwState, useHw, useHwPane } from '../store/hw-store.ts';
import { HwStatus, cursorOf } from './HwStatus.tsx';
import { UNIT_FAMILIES } from './palette.ts';
import { TimelineChart } from './timeline-chart.ts';
import { useHardwareSync } from './useHardware.ts';
import { useFolded, ViewTitle } from './ViewTitle.tsx';

function download(name: string, mime: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: mime }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Keeps the schedule current and moves the chart's cursor on every step; its own component so a step re-renders only this. */
function CursorSync({ pane, chart }: { pane: string; chart: { current: TimelineChart | null } }) {
  useHardwareSync();
  const step = useApp((s) => s.playback[pane].frame?.step ?? 0);
  const view = useHwPane(pane, (s) => s.view);
  useEffect(() => {
    if (!view) return;
    const c = cursorOf(view, step);
    chart.current?.setCursor(c.cycle, c.how === 'before' ? -1 : c.op);
  }, [view, step, chart]);
  return null;
}

/**
 * FA4's CTA pair on the timeline: which rows belong to the leader and which to the peer (two
 * SMs of one cluster), and what couples them. The jobs come from the schedule's roles.
 */
function CtaPairRows({ view }: { view: HwView }) {
  const side = (name: 'leader' | 'peer') => view.roles.filter((r) => r.name.split('/').includes(name));
  return (
    <div className="hw-pair-rows" data-testid="timeline-pair">
      <p>
        2-CTA mode (cta_group::2): the rows come in pairs, leader/… above peer/…, one CTA on each of two SMs. The leader&apos;s MMA warp
        issues every MMA marked &ldquo;(cta_group::2)&rdquo; for both CTAs; its bar reaches down through peer/mma because both SMs&apos;
        tensor cores compute it, each its own CTA&apos;s 128 rows into its own TMEM. The peer&apos;s loads count on the leader&apos;s
        barriers, the peer&apos;s softmax waits for the leader&apos;s MMA, and the leader&apos;s next MMA waits for both CTAs.
      </p>
      <div className="hw-pair-cols">
        {(['leader', 'peer'] as const).map((n) => (
          <section key={n} data-testid="pair-side" data-side={n} aria-label={`${n} CTA rows`}>
            <h4>{n === 'leader' ? 'Leader CTA (rank 0)' : 'Peer CTA (rank 1)'}</h4>
            <ul>
              {side(n).map((r) => (
                <li key={r.name} data-testid="pair-role" data-role={r.name}>
                  <b>{r.name}</b> <span className="dim">{r.job}</span>
                </li>
              ))}
            </ul>
          </section>
        ))}
      </div>
    </div>
  );
}

export function TimelineView() {
  const { pane, ctl } = usePane();
  const algorithm = useApp((s) => s.playback[pane].summary?.algorithm ?? '');
  const pass = useApp((s) => (s.playback[pane].summary?.pass === 'backward' ? 'backward' : 'forward'));
  const choice = choiceKey(algorithm, pass);
  const view = useHwPane(pane, (s) => s.view);
  const gpuChoice = useHwPane(pane, (s) => s.gpu[choice]);
  const features = useHwPane(pane, (s) => s.features[choice]);
  const host = useRef<HTMLDivElement>(null);
  const chart = useRef<TimelineChart | null>(null);
  const [util, setUtil] = useState<Record<string, number>>({});
  const [follow, setFollow] = useState(true);
  const [exportError, setExportError] = useState<string | undefined>();
  // The view can outlive its run by a render (FA1's backward, which has no schedule, after FA2's).
  const modelled = algorithm !== '' && hasHardwareModel(algorithm, pass);
  const gpu = gpuChoice ?? (modelled ? defaultGpu(algorithm, pass) : '');
  const folded = useFolded(pane, 'timeline');

  useEffect(() => {
    const c = new TimelineChart(host.current!, {
      onSeek: (op, cycle) => {
        const v = hwState(pane).view;
        if (v) void ctl.seek(stepForClick(v.map, op, cycle));
      },
      onWindow: (window, u) => {
        useHw.getState().patch(pane, { window });
        setUtil(u);
      },
    });
    chart.current = c;
    return () => {
      c.destroy();
      chart.current = null;
    };
  }, [pane, ctl]);
  useEffect(() => {
    if (view && !folded) chart.current?.setData(view, hwState(pane).window);
  }, [view, pane, folded]);
  useEffect(() => {
    if (chart.current) chart.current.follow = follow;
  }, [follow]);
  const theme = useApp((s) => s.layout.theme);
  // biome-ignore lint/correctness/useExhaustiveDependencies: redraw reads the theme's colours from CSS; the theme is what changed them
  useEffect(() => {
    // App.tsx sets the theme attribute in its own effect, which runs after this one.
    const id = requestAnimationFrame(() => chart.current?.redraw());
    return () => cancelAnimationFrame(id);
  }, [theme]);

  const setFeature = (key: keyof HwFeatures, on: boolean) => {
    const cur = hwState(pane).features;
    useHw.getState().patch(pane, { features: { ...cur, [choice]: { ...(cur[choice] ?? {}), [key]: on } } });
  };
  const exportAs = async (f: HwExportFormat) => {
    try {
      setExportError(undefined);
      const x = await ctl.worker.hwExport(f);
      download(x.filename, x.mime, x.text);
    } catch (e) {
      setExportError(messageOf(e));
    }
  };
  const switches = (view?.switches ?? []).filter((s) => s.toggle);
  return (
    <section className="view hw-timeline" aria-label="Warp-role timeline">
      <ViewTitle pane={pane} id="timeline" title="Warp-role timeline" />
      <div hidden={folded}>
        <div className="hw-controls">
          <label>
            GPU{' '}
            <select
              aria-label="GPU"
              value={gpu}
              onChange={(e) => useHw.getState().patch(pane, { gpu: { ...hwState(pane).gpu, [choice]: e.target.value } })}
            >
              {modelled &&
                gpusFor(algorithm, pass).map((g) => (
                  <option key={g.id} value={g.id}>
                    {g.name}
                  </option>
                ))}
            </select>
          </label>
          {switches.map((s) => (
            <label key={s.key} title={s.absent ? `Not in this kernel: ${s.absent}` : s.doc}>
              <input
                type="checkbox"
                aria-label={s.label}
                aria-description={s.absent ? `not in this kernel: ${s.absent}` : undefined}
                disabled={s.absent !== undefined}
                checked={s.absent ? false : Boolean(features?.[s.key] ?? view?.features[s.key])}
                onChange={(e) => setFeature(s.key, e.target.checked)}
              />{' '}
              {s.label}
              {s.absent && <span className="dim"> (not in this kernel)</span>}
            </label>
          ))}
          <label title="Keep the cursor in view while stepping">
            <input type="checkbox" aria-label="Follow cursor" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> follow
          </label>
          <button type="button" onClick={() => chart.current?.fit()}>
            Fit
          </button>
          <button type="button" onClick={() => void exportAs('chrome')} disabled={!view}>
            Export Chrome trace
          </button>
          <button type="button" onClick={() => void exportAs('jsonl')} disabled={!view}>
            Export JSONL
          </button>
        </div>
        {exportError && (
          <p className="error" role="alert">
            Export failed: {exportError}
          </p>
        )}
        {!folded && <HwStatus />}
        {!folded && <CursorSync pane={pane} chart={chart} />}
        {view?.resources.cta_group === 2 && <CtaPairRows view={view} />}
        <div ref={host} className="tl-host" />
        <div className="hw-legend">
          {UNIT_FAMILIES.map((f) => (
            <span key={f.id} className="hw-legend-item" data-testid="util" data-family={f.id} data-value={util[f.id] ?? ''}>
              <i style={{ background: f.colour }} /> {f.label}
              {f.id !== 'sync' && util[f.id] !== undefined && <b> {(util[f.id] * 100).toFixed(0)}%</b>}
            </span>
          ))}
        </div>
        <p className="dim">
          Percentages: share of the visible window in which the unit had an op in flight (averaged over sub-partitions). Lower bars are
          async work from issue to completion; thin grey bars are barrier waits; hover an op for the ops it waited on, click it to move the
          debugger to its step.
        </p>
        <details className="hw-mapping">
          <summary>How a step is placed on the timeline</summary>
          <p>
            The numeric trace and the kernel use their own tile sizes, so a step is placed by its rows and key columns: its CTA (the one
            whose rows hold the step's first row), its K/V blocks and its sub-unit (softmax warpgroup, consumer warpgroup or warp). The
            cursor is the end of the latest op of that CTA, K/V block and sub-unit that does the step's phase (load, S = QKᵀ, softmax parts,
            P·V, normalize, write): the moment the hardware has done what the step shows. A phase the kernel folds into another op (a mask
            inside the softmax) uses that op and is marked as such. Clicking an op seeks to the first step placed on it; clicking a barrier
            wait seeks to the last step placed before it.
          </p>
          <p>
            Backward: one CTA owns a column block of K and V and walks the row blocks of Q that see it, so a backward step is placed by its
            first key (the CTA) and its first row (the row block); on FA3 also by the consumer warpgroup whose keys it covers. A dQ step
            ends with the add that put the partial into the fp32 dQ accumulator (the dQ writer's TMA reduce-add on FA3, the warps'
            atomicAdds on FA2). D = rowsum(dO ∘ O) and the dQ conversion run in kernels of their own, before and after this one.
          </p>
        </details>
      </div>
    </section>
  );
}
