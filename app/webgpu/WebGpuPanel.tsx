// The WebGPU panel: the same attention problem at full size on the person's GPU (or on the
// CPU engine, for comparison at sizes it can handle). Everything heavy happens in
// webgpu.worker.ts; this component keeps what the person set across errors, cancels and
// device losses, and only ever replaces the result when a new run succeeds.

import { useCallback, useEffect, useRef, useState } from 'react';
import {
  type Pass,
  type AttentionProblem,
  PATH_LABELS,
  type WebGpuPath,
  type BackwardPath,
  webgpuDefaultsFor,
  webgpuPathFix,
  type WebGpuField,
  type WebGpuShape,
} from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import type { AdapterReport, Backend, RunReport } from './protocol.ts';
import { startWebGpuWorker, type WebGpuClient } from './webgpu-client.ts';
import { GridHeatmap, LseChart } from './ResultViews.tsx';
import { MaskEditor } from '../mask/MaskEditor.tsx';
import { FULL, NO_MODIFIERS, PRESETS, SHAPE_FIELDS, shapeOf, toProblem, type Form } from './webgpu-form.ts';
import { RooflineView } from './RooflineView.tsx';
import { fastestPath, missingFeatureAdvice } from './feature-advice.ts';
import { onFirstSeen } from './first-seen.ts';
import './webgpu.css';

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

type Probe = { state: 'probing' } | { state: 'ok'; adapter: AdapterReport } | { state: 'none'; message: string };

export default function WebGpuPanel() {
  const [form, setFormState] = useState<Form>(FULL);
  const [backend, setBackend] = useState<Backend>('webgpu');
  const [path, setPath] = useState<WebGpuPath>('flash-f32');
  const [pass, setPass] = useState<Pass>('forward');
  const [bwdPath, setBwdPath] = useState<BackwardPath>('flash-f32');
  const [probe, setProbe] = useState<Probe>({ state: 'probing' });
  const [progress, setProgress] = useState<{ stage: string; fraction: number } | null>(null);
  const [report, setReport] = useState<RunReport | null>(null);
  // The problem of the report shown (the roofline counts need its shape).
  const [reportProblem, setReportProblem] = useState<AttentionProblem | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const worker = useRef<WebGpuClient | null>(null);
  // A path the person picked survives a re-probe (after a cancel); otherwise the fastest offered one is used.
  const pathPicked = useRef(false);
  const seq = useRef(0);
  const showInDebugger = useApp((s) => s.showProblem);
  const hasMain = useApp((s) => !!s.problem.main);

  const start = useCallback(() => {
    const client = startWebGpuWorker((why) => {
      setProgress(null);
      setError(`The WebGPU worker failed: ${why}. Your settings are kept; run again to restart it.`);
      worker.current?.dispose();
      worker.current = null;
    });
    const api = client.api;
    worker.current = client;
    const id = ++seq.current;
    api.probe().then(
      (adapter) => {
        if (id !== seq.current) return;
        setProbe({ state: 'ok', adapter });
        setPath((cur) => (pathPicked.current && adapter.paths.includes(cur) ? cur : fastestPath(adapter.paths)));
      },
      (e: unknown) => {
        if (id !== seq.current) return;
        setProbe({ state: 'none', message: message(e) });
        setBackend('cpu');
      },
    );
  }, []);

  const panel = useRef<HTMLElement>(null);
  useEffect(() => {
    const stop = panel.current ? onFirstSeen(panel.current, start) : (start(), () => {});
    return () => {
      stop();
      worker.current?.dispose();
    };
  }, [start]);

  const set = (patch: Partial<Form>) => setFormState((f) => ({ ...f, ...patch }));
  // Shape fields the person typed: a path chosen later keeps them where it takes them.
  const touched = useRef(new Set<WebGpuField>());
  const limits = probe.state === 'ok' ? { maxStorageBinding: probe.adapter.maxStorageBinding } : null;
  const choosePath = (p: WebGpuPath) => {
    pathPicked.current = true;
    setPath(p);
    const s = webgpuDefaultsFor(p, shapeOf(form), touched.current, limits ?? { maxStorageBinding: Infinity });
    set(Object.fromEntries(SHAPE_FIELDS.map((k) => [k, String(s[k])])) as Partial<Form>);
  };
  const shape = shapeOf(form);
  const fix =
    backend === 'webgpu' && limits && SHAPE_FIELDS.every((k) => shape[k] !== undefined)
      ? webgpuPathFix(path, shape as WebGpuShape, limits)
      : [];
  const fixText = fix.map((c) => `${c.field === 'nq' ? 'Nq' : c.field === 'nk' ? 'Nk' : c.field} to ${c.to}`).join(' and ');

  /** The form's problem, or undefined with the bad field's message shown (the typed text stays). */
  const problemOrMessage = (): AttentionProblem | undefined => {
    try {
      return toProblem(form);
    } catch (e) {
      setError(message(e));
      return undefined;
    }
  };

  const run = () => {
    const problem = problemOrMessage();
    if (!problem) return;
    if (!worker.current) start();
    setError(null);
    setNote(null);
    const id = ++seq.current;
    // Progress comes on its own channel: once the run has settled, a late stage is dropped.
    let settled = false;
    const onProgress = (stage: string, fraction: number) => {
      if (!settled && id === seq.current) setProgress({ stage, fraction });
    };
    setProgress({ stage: 'starting', fraction: 0 });
    const req = {
      backend,
      pass,
      path: pass === 'backward' ? bwdPath : path,
      problem,
      seed: Number(form.seed) || 1,
      checkRows: 4,
      blockSparse: form.blockSparse && problem.mask?.maskMod !== undefined,
    };
    worker.current!.api.run(req, worker.current!.progress(onProgress)).then(
      (r) => {
        settled = true;
        if (id !== seq.current) return;
        setProgress(null);
        setReport(r);
        setReportProblem(problem);
        setError(null);
      },
      (e: unknown) => {
        settled = true;
        if (id !== seq.current) return;
        setProgress(null);
        setError(message(e));
      },
    );
  };

  const cancel = () => {
    worker.current?.dispose();
    worker.current = null;
    setProgress(null);
    setError('Run cancelled. The GPU work was abandoned with its worker; settings and the previous result are kept.');
    start();
  };

  const openInDebugger = () => {
    const p = problemOrMessage();
    if (!p) return;
    const nq = Math.min(p.nq, 128);
    const nk = Math.min(p.nk, Math.max(nq, Math.round((p.nk / p.nq) * nq)), 128);
    showInDebugger('main', { ...p, batch: 1, hq: 1, hk: 1, nq, nk, d: Math.min(p.d, 64), dv: Math.min(p.dv, 64) }, Number(form.seed) || 1);
    setNote(
      `Copied to the step debugger's problem form at B=1, H=1, Nq=${nq}, Nk=${nk}, d=${Math.min(p.d, 64)} (same masks and modifiers) — press Load there to step through it.`,
    );
  };

  const busy = progress !== null;
  const decodesListed = backend === 'webgpu' && pass === 'forward' && path === 'decode' && form.maskMod.trim() !== '';
  const paths = probe.state === 'ok' ? probe.adapter.paths : [];
  const advice = probe.state === 'ok' ? missingFeatureAdvice(probe.adapter.features, probe.adapter.matrixF16) : [];
  const field = (k: keyof Form, label: string, title?: string) => (
    <label className="wg-field" title={title}>
      <span>{label}</span>
      <input
        value={form[k] as string}
        onChange={(e) => {
          if ((SHAPE_FIELDS as readonly string[]).includes(k)) touched.current.add(k as WebGpuField);
          set({ [k]: e.target.value });
        }}
        disabled={busy}
        aria-label={label}
      />
    </label>
  );

  return (
    <section ref={panel} className="wg-panel" aria-label="WebGPU full-size runs">
      <h2>Full-size runs: WebGPU</h2>
      <div className="wg-adapter" role="status" aria-label="adapter">
        {probe.state === 'probing' && 'Looking for a WebGPU adapter…'}
        {probe.state === 'none' && <span className="wg-err">WebGPU is unavailable: {probe.message} The CPU engine below still works.</span>}
        {probe.state === 'ok' && (
          <>
            <b>{probe.adapter.name}</b>
            {probe.adapter.fallback && ' (software adapter: correct but slow; timings mean nothing here)'}
            <div className="wg-dim">features: {probe.adapter.features.join(', ')}</div>
            <div className="wg-dim">limits: {probe.adapter.limits}</div>
          </>
        )}
      </div>
      {advice.length > 0 && (
        <div className="wg-missing">
          <span className="wg-dim">Missing here (the kernel list starts on the fastest path that runs):</span>
          <ul aria-label="missing adapter features">
            {advice.map((a) => (
              <li key={a.feature}>
                <b>{a.feature}</b>: {a.loses}. {a.how}.
              </li>
            ))}
          </ul>
        </div>
      )}
      <div className="wg-row" role="radiogroup" aria-label="pass">
        <label>
          <input type="radio" name="wg-pass" checked={pass === 'forward'} disabled={busy} onChange={() => setPass('forward')} /> Forward
        </label>
        <label title={probe.state === 'ok' ? undefined : 'the backward kernels need a WebGPU adapter'}>
          <input
            type="radio"
            name="wg-pass"
            checked={pass === 'backward'}
            disabled={busy || probe.state !== 'ok'}
            onChange={() => {
              setPass('backward');
              setBackend('webgpu');
            }}
          />{' '}
          Backward
        </label>
        {pass === 'backward' && (
          <label className="wg-field">
            <span>backward kernel</span>
            <select
              value={bwdPath}
              onChange={(e) => setBwdPath(e.target.value as BackwardPath)}
              disabled={busy}
              aria-label="backward kernel"
            >
              <option value="flash-f32">f32 (every variant, exact to 1e-6)</option>
              <option value="flash-matrix" disabled={!paths.includes('flash-matrix')}>
                f16 subgroup matrices (tensor cores){paths.includes('flash-matrix') ? '' : ': not offered by this adapter'}
              </option>
            </select>
          </label>
        )}
        {pass === 'backward' && (
          <span className="wg-dim" data-testid="wg-pass-note">
            {bwdPath === 'flash-matrix'
              ? "dQ, dK, dV from a random dO, inputs rounded to f16: the flash-matrix forward for O and LSE, then one K/V-outer kernel on subgroup matrices with dK and dV in registers and dQ added into a fixed-point i32 accumulator (integer atomics: the same bits whatever order the workgroups add in). TFLOP/s count 2.5 × the forward's FLOPs."
              : "dQ, dK, dV from a random dO: the f32 flash forward for O and LSE, then D = rowsum(dO∘O), a dK/dV kernel and a dQ kernel (f32, no atomics). TFLOP/s count 2.5 × the forward's FLOPs."}
          </span>
        )}
      </div>
      <div className="wg-row" role="radiogroup" aria-label="backend">
        <label>
          <input
            type="radio"
            name="wg-backend"
            checked={backend === 'webgpu'}
            disabled={busy || probe.state !== 'ok'}
            onChange={() => setBackend('webgpu')}
          />{' '}
          WebGPU
        </label>
        <label>
          <input
            type="radio"
            name="wg-backend"
            checked={backend === 'cpu'}
            disabled={busy || pass === 'backward'}
            onChange={() => setBackend('cpu')}
          />{' '}
          CPU (FA2 step engine)
        </label>
        {backend === 'webgpu' && pass === 'forward' && (
          <label className="wg-field">
            <span>kernel</span>
            <select value={path} onChange={(e) => choosePath(e.target.value as WebGpuPath)} disabled={busy} aria-label="kernel path">
              {paths.map((p) => (
                <option key={p} value={p}>
                  {PATH_LABELS[p]}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      <div className="wg-row">
        <label className="wg-field">
          <span>preset</span>
          <select
            value=""
            disabled={busy}
            aria-label="preset"
            onChange={(e) => {
              const preset = PRESETS[Number(e.target.value)];
              if (!preset) return;
              touched.current.clear();
              set({ ...NO_MODIFIERS, ...preset.form });
              if (preset.path && paths.includes(preset.path)) {
                pathPicked.current = true;
                setPath(preset.path);
              }
            }}
          >
            <option value="" disabled>
              a shape from the benchmark…
            </option>
            {PRESETS.map((p, i) => (
              <option key={p.name} value={i}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div className="wg-row">
        {field('batch', 'B')}
        {field('hq', 'Hq')}
        {field('hk', 'Hk', 'key/value heads (GQA/MQA when fewer than Hq)')}
        {field('nq', 'Nq')}
        {field('nk', 'Nk')}
        {field('d', 'd')}
        {field('dv', 'dv')}
      </div>
      <div className="wg-row">
        <label>
          <input type="checkbox" checked={form.causal} onChange={(e) => set({ causal: e.target.checked })} disabled={busy} /> causal
        </label>
        {field('windowLeft', 'window left', 'empty = unbounded')}
        {field('windowRight', 'window right', 'empty = unbounded')}
        <label>
          <input type="checkbox" checked={form.alibi} onChange={(e) => set({ alibi: e.target.checked })} disabled={busy} /> ALiBi
        </label>
        {field('softcap', 'softcap', 'empty = none')}
        {field('seed', 'seed')}
      </div>
      <div className="wg-row wg-mask">
        <MaskEditor form={form} set={set} />
        <label
          title={
            decodesListed
              ? 'flash-decoding with a mask always walks the block list: each split takes a run of the K/V tiles with a visible key'
              : 'each Q tile walks only the K/V tiles where the mask_mod leaves a key visible'
          }
        >
          <input
            type="checkbox"
            checked={form.blockSparse || decodesListed}
            onChange={(e) => set({ blockSparse: e.target.checked })}
            disabled={busy || form.maskMod.trim() === '' || decodesListed}
          />{' '}
          block-sparse
        </label>
      </div>
      {fix.length > 0 && (
        <div className="wg-fit" role="status" data-testid="wg-fit">
          {PATH_LABELS[path]} cannot run this here: {fix[0].why}. Set {fixText}, or pick a flash path (they run any size, in windows).{' '}
          <button
            type="button"
            disabled={busy}
            onClick={() => set(Object.fromEntries(fix.map((c) => [c.field, String(c.to)])) as Partial<Form>)}
          >
            Set {fixText}
          </button>
        </div>
      )}
      <div className="wg-row">
        <button type="button" className="primary" onClick={run} disabled={busy}>
          Run
        </button>
        <button type="button" onClick={cancel} disabled={!busy}>
          Cancel
        </button>
        <button type="button" onClick={openInDebugger} disabled={busy || !hasMain}>
          Open in step debugger
        </button>
        {progress && (
          <span
            className="wg-progress"
            role="progressbar"
            aria-valuenow={Math.round(progress.fraction * 100)}
            aria-valuemin={0}
            aria-valuemax={100}
          >
            <progress value={progress.fraction} max={1} /> {progress.stage}
          </span>
        )}
      </div>
      {error && (
        <div className="wg-err" role="alert">
          {error}
        </div>
      )}
      {note && <div className="wg-note">{note}</div>}
      {report && (
        <section className="wg-result" aria-label="result">
          <table className="wg-table">
            <tbody>
              <tr>
                <th>backend</th>
                <td>
                  {report.backend === 'cpu'
                    ? 'CPU (FA2 step engine)'
                    : report.pass === 'backward'
                      ? report.path === 'flash-matrix'
                        ? 'backward, f16 subgroup matrices (after the flash-matrix forward)'
                        : 'backward, f32 (after the flash-f32 forward)'
                      : PATH_LABELS[report.path as WebGpuPath]}
                </td>
              </tr>
              <tr>
                <th>time</th>
                <td data-testid="wg-time">
                  {report.ms.toFixed(3)} ms ({report.clock})
                </td>
              </tr>
              <tr>
                <th>TFLOP/s</th>
                <td data-testid="wg-tflops">{report.tflops.toPrecision(3)}</td>
              </tr>
              {report.backend === 'webgpu' && report.pass === 'forward' && (
                <tr>
                  <th>GB/s</th>
                  <td>{report.gbs.toPrecision(3)} (Q, K, V read once, O and LSE written once)</td>
                </tr>
              )}
              <tr>
                <th>kernels</th>
                <td>{report.kernels.map((k) => `${k.name}: ${k.ms.toFixed(3)} ms`).join('; ')}</td>
              </tr>
              <tr>
                <th>configuration</th>
                <td>{report.config}</td>
              </tr>
              <tr>
                <th>check</th>
                <td data-testid="wg-check">
                  {report.check.rows} sampled rows vs float64 CPU reference: max |ΔO| = {report.check.maxAbsErrO.toExponential(2)}, max
                  |ΔLSE| = {report.check.maxAbsErrLse.toExponential(2)}
                </td>
              </tr>
              {report.gradCheck && (
                <tr>
                  <th>gradient check</th>
                  <td data-testid="wg-grad-check">
                    {report.gradCheck.rows} sampled dQ rows vs float64: max |ΔdQ| = {report.gradCheck.maxAbsErrDq.toExponential(2)}
                  </td>
                </tr>
              )}
            </tbody>
          </table>
          <div className="wg-views">
            <figure>
              <GridHeatmap grid={report.heatmap} />
              <figcaption>
                {report.pass === 'backward' ? 'dQ' : 'O'} of batch 0, head 0: {report.heatmap.rows}×{report.heatmap.cols} cells, each the
                mean of a {report.heatmap.rowBlock}×{report.heatmap.colBlock} block of rows × columns
              </figcaption>
            </figure>
            <figure>
              <LseChart lse={report.lse} />
              <figcaption>LSE per query row, batch 0, head 0 ({report.lse.length} rows; gaps are fully masked rows)</figcaption>
            </figure>
          </div>
          <RooflineView report={report} problem={reportProblem} />
        </section>
      )}
    </section>
  );
}
