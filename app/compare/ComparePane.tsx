// One compare pane: its own worker session (a PaneController), its own algorithm, tiles
// and features over the shared problem, a transport, and any of the debugger's views.

import { Component, Suspense, useEffect, useState, type ReactNode } from 'react';
import { ALGORITHMS, hasBackward, DTYPES, isFp8 } from '../../engine/api.ts';
import { PaneContext } from '../store/pane-context.ts';
import { messageOf, PaneController } from '../store/pane-controller.ts';
import { Transport } from '../panels/Transport.tsx';
import { RunTile } from '../panels/RunTile.tsx';
import { ExportBar, ExportFrame } from '../export/ExportControls.tsx';
import { useApp } from '../store/store.ts';
import { VIEWS } from '../views/registry.ts';
import { useCompare } from './compare-store.ts';
import { registerController } from '../store/controllers.ts';
import { comparePaneId, paneSwitchSpecs } from './pane-config.ts';
import { paneRequest, sharedRequest, SHARED_PANE } from './shared-request.ts';
import { chooseCompareAlgorithm } from './compare-defaults.ts';
import { markTouched } from '../defaults/form-defaults.ts';
import { dtypeFixes, inactiveSwitches, isFp8OnlyFeature, paneDtype, paneRefusal } from './pane-dtype.ts';
import { reloadShared } from './shared-reload.ts';

class Boundary extends Component<{ title: string; children: ReactNode }, { error: string | null }> {
  override state = { error: null as string | null };
  static getDerivedStateFromError(e: unknown) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
  override render() {
    return this.state.error ? (
      <section className="view" role="alert">
        <p className="error">
          The {this.props.title} view failed: {this.state.error}
        </p>
      </section>
    ) : (
      this.props.children
    );
  }
}

function PaneSettings({ index, ctl }: { index: number; ctl: PaneController }) {
  const cfg = useCompare((s) => s.panes[index]);
  const setPane = useCompare((s) => s.setPane);
  const id = comparePaneId(index);
  const [bm, setBm] = useState(cfg.blockM);
  const [bn, setBn] = useState(cfg.blockN);
  useEffect(() => {
    setBm(cfg.blockM);
    setBn(cfg.blockN);
  }, [cfg.blockM, cfg.blockN]);
  const backward = useApp((s) => s.problem[SHARED_PANE]?.applied?.pass === 'backward');
  const sharedDtype = useApp((s) => s.problem[SHARED_PANE]?.applied?.problem.dtype ?? s.problem[SHARED_PANE]?.form.dtype ?? 'fp32');
  const fromFiles = useApp((s) => !!s.problem[SHARED_PANE]?.applied?.tensors);
  const dtype = fromFiles ? sharedDtype : paneDtype(cfg, sharedDtype);
  const refused = useApp((s) => paneRefusal(cfg, s.problem[SHARED_PANE]?.applied) !== undefined);
  // FP8-only switches (block quantization, incoherent processing, the P scale) appear with an FP8 dtype only.
  // Switches whose condition on the others fails (sage's qPerWarp on version 1) are hidden, as in the problem panel.
  const off = backward ? [] : inactiveSwitches(cfg.algorithm, dtype, cfg.features);
  const specs = Object.fromEntries(
    Object.entries(paneSwitchSpecs(cfg.algorithm, backward)).filter(
      ([k]) => (isFp8(dtype) || !isFp8OnlyFeature(cfg.algorithm, k)) && !off.includes(k),
    ),
  );
  return (
    <form
      className="compare-settings"
      aria-label={`Pane ${index + 1} settings`}
      onSubmit={(e) => {
        e.preventDefault();
        setPane(index, { blockM: bm, blockN: bn });
      }}
    >
      <label className="field">
        <span>Algorithm</span>
        <select
          aria-label={`Pane ${index + 1} algorithm`}
          value={cfg.algorithm}
          onChange={(e) => chooseCompareAlgorithm(index, e.target.value)}
        >
          {ALGORITHMS.map((a) => (
            <option key={a.id} value={a.id} disabled={backward && !hasBackward(a.id)}>
              {a.name}
              {backward && !hasBackward(a.id) ? ' (forward only)' : ''}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>dtype</span>
        <select
          aria-label={`Pane ${index + 1} dtype`}
          value={fromFiles ? '' : (cfg.dtype ?? '')}
          disabled={fromFiles}
          title={
            fromFiles
              ? "Inputs from files run in the files' dtype; a pane's own dtype applies to random inputs"
              : "This pane's input precision (FP8 where the algorithm has an FP8 path)"
          }
          onChange={(e) => setPane(index, { dtype: e.target.value === '' ? undefined : (e.target.value as (typeof DTYPES)[number]) })}
        >
          <option value="">shared ({sharedDtype})</option>
          {DTYPES.map((d) => (
            <option key={d} value={d}>
              {d}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Br</span>
        <input
          aria-label={`Pane ${index + 1} Br`}
          size={4}
          value={bm}
          placeholder="auto"
          onChange={(e) => {
            setBm(e.target.value);
            markTouched(id, ['blockM']);
          }}
          onBlur={() => setPane(index, { blockM: bm, blockN: bn })}
        />
      </label>
      <label className="field">
        <span>Bc</span>
        <input
          aria-label={`Pane ${index + 1} Bc`}
          size={4}
          value={bn}
          placeholder="auto"
          onChange={(e) => {
            setBn(e.target.value);
            markTouched(id, ['blockN']);
          }}
          onBlur={() => setPane(index, { blockM: bm, blockN: bn })}
        />
      </label>
      {Object.entries(specs).map(([key, spec]) =>
        typeof spec.default === 'boolean' ? (
          <label key={key} title={spec.doc} className="feature">
            <input
              type="checkbox"
              aria-label={`Pane ${index + 1} ${key}`}
              checked={(cfg.features[key] ?? spec.default) as boolean}
              onChange={(e) => {
                const features = { ...cfg.features };
                if (e.target.checked === spec.default) delete features[key];
                else features[key] = e.target.checked;
                setPane(index, { features });
              }}
            />{' '}
            {key}
          </label>
        ) : (
          <label key={`${key}:${String(cfg.features[key] ?? spec.default)}`} title={spec.doc} className="field">
            <span>{key}</span>
            <input
              aria-label={`Pane ${index + 1} ${key}`}
              size={4}
              defaultValue={String(cfg.features[key] ?? spec.default)}
              onBlur={(e) => {
                const features = { ...cfg.features };
                const v = Number(e.target.value);
                if (e.target.value.trim() === String(spec.default)) delete features[key];
                else if (e.target.value.trim() === '' || !Number.isFinite(v)) {
                  useApp
                    .getState()
                    .patchPlayback(id, { error: { place: 'problem', message: `${key}: must be a number, got "${e.target.value}"` } });
                  return;
                } else features[key] = v;
                setPane(index, { features });
              }}
            />
          </label>
        ),
      )}
      <button type="submit" hidden>
        Apply
      </button>
      <button
        type="button"
        disabled={refused}
        onClick={() => void ctl.load(paneRequest(sharedRequest(), useCompare.getState().panes[index]))}
        className="dim-button"
      >
        Reload
      </button>
    </form>
  );
}

function ViewPicker({ index }: { index: number }) {
  const views = useCompare((s) => s.panes[index].views);
  const setPane = useCompare((s) => s.setPane);
  return (
    <fieldset className="view-picker">
      <legend>Views</legend>
      {VIEWS.map((v) => (
        <label key={v.id}>
          <input
            type="checkbox"
            aria-label={`Pane ${index + 1} view ${v.title}`}
            checked={views.includes(v.id)}
            onChange={(e) =>
              setPane(index, {
                views: e.target.checked
                  ? VIEWS.map((x) => x.id).filter((x) => x === v.id || views.includes(x))
                  : views.filter((x) => x !== v.id),
              })
            }
          />{' '}
          {v.title}
        </label>
      ))}
    </fieldset>
  );
}

function PaneViews({ index }: { index: number }) {
  const id = comparePaneId(index);
  const views = useCompare((s) => s.panes[index].views);
  const summary = useApp((s) => s.playback[id]?.summary);
  const status = useApp((s) => s.playback[id]?.status);
  if (!summary || status === 'empty') return null;
  return (
    <div className="compare-views">
      {VIEWS.filter((v) => views.includes(v.id) && (!v.when || v.when(summary))).map((v) => (
        <Boundary key={v.id} title={v.title}>
          <ExportFrame id={v.id} title={v.title}>
            <Suspense fallback={<section className="view dim">Loading {v.title.toLowerCase()}…</section>}>
              <v.component />
            </Suspense>
          </ExportFrame>
        </Boundary>
      ))}
    </div>
  );
}

/** A pane whose algorithm cannot run its dtype: why, and the fixes, each one click. The pane's previous run is not shown (it would be another configuration's). */
function DtypeRefusal({ index, message }: { index: number; message: string }) {
  const cfg = useCompare((s) => s.panes[index]);
  const applied = useApp((s) => s.problem[SHARED_PANE]?.applied);
  if (!applied) return null;
  const fixes = dtypeFixes(cfg, applied);
  return (
    <div className="banner error dtype-refusal" role="alert" data-testid="dtype-refusal">
      <span>{message} This pane is not run; the other panes are unaffected. </span>
      {fixes.map((f) => (
        <button
          key={f.label}
          type="button"
          onClick={() => {
            if (f.shared) {
              const { form, problem } = f.shared;
              reloadShared(form, (prev) => ({ ...prev, problem: { ...prev.problem, ...problem } }));
            } else if (f.patch?.algorithm && f.patch.algorithm !== cfg.algorithm) chooseCompareAlgorithm(index, f.patch.algorithm);
            else if (f.patch) useCompare.getState().setPane(index, f.patch);
          }}
        >
          {f.label}
        </button>
      ))}
    </div>
  );
}

/** With the 'time' axis: where this pane's current step lies in simulated time on the chosen GPU. */
function SimulatedTime({ index, ctl }: { index: number; ctl: PaneController }) {
  const id = comparePaneId(index);
  const axis = useCompare((s) => s.axis);
  const gpu = useCompare((s) => s.gpu);
  const step = useApp((s) => s.playback[id]?.frame?.step);
  const summary = useApp((s) => s.playback[id]?.summary);
  const [t, setT] = useState<number | null | undefined>(undefined);
  useEffect(() => {
    if (axis !== 'time' || step === undefined || !summary) return;
    let live = true;
    ctl.api.syncPoint(gpu).then(
      (p) => live && setT(p.timeUs),
      () => live && setT(undefined),
    );
    return () => {
      live = false;
    };
  }, [axis, gpu, step, summary, ctl]);
  if (axis !== 'time' || t === undefined) return null;
  return (
    <span className="sim-time" data-testid="sim-time">
      {t === null ? 'no hardware schedule' : `t = ${t.toFixed(3)} µs on ${gpu.toUpperCase()}`}
    </span>
  );
}

export function ComparePane({ index }: { index: number }) {
  const id = comparePaneId(index);
  const [ctl, setCtl] = useState<PaneController | null>(null);
  const cfg = useCompare((s) => s.panes[index]);
  const shared = useApp((s) => s.problem[SHARED_PANE]?.applied);
  const error = useApp((s) => s.playback[id]?.error);
  const notice = useApp((s) => s.playback[id]?.notice);
  const tooLarge = useApp((s) => s.playback[id]?.tooLarge);
  const status = useApp((s) => s.playback[id]?.status);
  const algorithmName = useApp((s) => s.playback[id]?.summary?.algorithmName);
  const refusal = useApp((s) => paneRefusal(cfg, s.problem[SHARED_PANE]?.applied));
  const applying = useCompare((s) => s.applying);

  useEffect(() => {
    useApp.getState().addPane(id, useCompare.getState().panes[index].views);
    const c = new PaneController(id);
    const unregister = registerController(id, c);
    setCtl(c);
    return () => {
      unregister();
      c.dispose();
      useCompare.getState().setResult(index, undefined);
    };
  }, [id, index]);

  // (Re)load whenever the shared problem or this pane's own settings change.
  const key = JSON.stringify({
    algorithm: cfg.algorithm,
    blockM: cfg.blockM,
    blockN: cfg.blockN,
    features: cfg.features,
    shared: shared && { ...shared, tensors: shared.tensors ? shared.tensors.names : undefined },
  });
  // biome-ignore lint/correctness/useExhaustiveDependencies: the load reads the pane's settings from the store; key is those of them that change the run
  useEffect(() => {
    if (!ctl || !shared || applying) return;
    useCompare.getState().setResult(index, undefined);
    useCompare.getState().setFailure(index, undefined);
    if (refusal) {
      ctl.dismissError();
      return;
    }
    try {
      void ctl.load(paneRequest(sharedRequest(), useCompare.getState().panes[index])).then(() => {
        // The controller reports a failed load in the pane's playback; the compare summaries need it to stop waiting.
        const pb = useApp.getState().playback[id];
        const why = pb?.status === 'loading' ? undefined : (pb?.error?.message ?? pb?.tooLarge);
        if (why) useCompare.getState().setFailure(index, why);
      });
    } catch (e) {
      useApp.getState().patchPlayback(id, { error: { place: 'problem', message: messageOf(e) } });
      useCompare.getState().setFailure(index, messageOf(e));
    }
  }, [ctl, key, id, index, shared, applying, refusal]);

  // The store's view list for this pane follows the picker (views read it for their own logic).
  useEffect(() => {
    useApp.getState().setViews(id, cfg.views);
  }, [id, cfg.views]);

  if (!ctl) return null;
  return (
    <PaneContext.Provider value={{ pane: id, ctl }}>
      <section
        className="compare-pane"
        data-pane={id}
        aria-label={`Compare pane ${index + 1}`}
        onPointerDown={() => useApp.setState((s) => ({ layout: { ...s.layout, activePane: id } }))}
        onFocus={() => useApp.setState((s) => ({ layout: { ...s.layout, activePane: id } }))}
      >
        <header>
          <h2>
            Pane {index + 1} <span className="dim">{refusal ? cfg.algorithm : (algorithmName ?? '')}</span>{' '}
            {!refusal && <SimulatedTime index={index} ctl={ctl} />}
          </h2>
          <PaneSettings index={index} ctl={ctl} />
          {!refusal && <RunTile />}
        </header>
        {refusal && <DtypeRefusal index={index} message={refusal} />}
        {!refusal && (error || notice || tooLarge) && (
          <div className={`banner ${error ? 'error' : ''}`} role={error ? 'alert' : 'status'}>
            {error && <span>{error.message} </span>}
            {notice && <span>{notice} </span>}
            {tooLarge && <span>{tooLarge} </span>}
            <button type="button" onClick={() => ctl.dismissError()}>
              Dismiss
            </button>
          </div>
        )}
        {!refusal && (
          <>
            <Transport />
            <ExportBar />
            <ViewPicker index={index} />
            {status === 'loading' || applying ? <p className="dim">Loading…</p> : <PaneViews index={index} />}
          </>
        )}
      </section>
    </PaneContext.Provider>
  );
}
