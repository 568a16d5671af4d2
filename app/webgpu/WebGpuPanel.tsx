// The WebGPU panel: the same attention problem at full size on the person's GPU (or on the
// CPU engine, for comparison at sizes it can handle). Everything heavy happens in
// webgpu.worker.ts (reached through useWebGpuWorker); this component keeps what the person
// set across errors, cancels and device losses.

import { useRef, useState } from 'react';
import {
  type Pass,
  type AttentionProblem,
  type WebGpuPath,
  type BackwardPath,
  webgpuDefaultsFor,
  webgpuPathFix,
  type WebGpuField,
  type WebGpuShape,
} from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import type { Backend } from './protocol.ts';
import { FULL, NO_MODIFIERS, SHAPE_FIELDS, shapeOf, toProblem, type Form, type Preset } from './webgpu-form.ts';
import { fastestPath } from './feature-advice.ts';
import { message, useWebGpuWorker } from './useWebGpuWorker.ts';
import { AdapterStatus } from './AdapterStatus.tsx';
import { KernelChoice } from './KernelChoice.tsx';
import { PresetRow } from './PresetRow.tsx';
import { PathFit, ShapeForm } from './ShapeForm.tsx';
import { RunResult } from './RunResult.tsx';
import './webgpu.css';

export default function WebGpuPanel() {
  const [form, setFormState] = useState<Form>(FULL);
  const [backend, setBackend] = useState<Backend>('webgpu');
  const [path, setPath] = useState<WebGpuPath>('flash-f32');
  const [pass, setPass] = useState<Pass>('forward');
  const [bwdPath, setBwdPath] = useState<BackwardPath>('flash-f32');
  const [note, setNote] = useState<string | null>(null);
  // A path the person picked survives a re-probe (after a cancel); otherwise the fastest offered one is used.
  const pathPicked = useRef(false);
  const gpu = useWebGpuWorker({
    onAdapter: (adapter) => setPath((cur) => (pathPicked.current && adapter.paths.includes(cur) ? cur : fastestPath(adapter.paths))),
    onNoAdapter: () => setBackend('cpu'),
  });
  const { probe, progress } = gpu;
  const showInDebugger = useApp((s) => s.showProblem);
  const hasMain = useApp((s) => !!s.problem.main);

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
  const paths = probe.state === 'ok' ? probe.adapter.paths : [];
  const pickPreset = (preset: Preset) => {
    touched.current.clear();
    set({ ...NO_MODIFIERS, ...preset.form });
    if (preset.path && paths.includes(preset.path)) {
      pathPicked.current = true;
      setPath(preset.path);
    }
  };
  const shape = shapeOf(form);
  const fix =
    backend === 'webgpu' && limits && SHAPE_FIELDS.every((k) => shape[k] !== undefined)
      ? webgpuPathFix(path, shape as WebGpuShape, limits)
      : [];

  /** The form's problem, or undefined with the bad field's message shown (the typed text stays). */
  const problemOrMessage = (): AttentionProblem | undefined => {
    try {
      return toProblem(form);
    } catch (e) {
      gpu.setError(message(e));
      return undefined;
    }
  };

  const run = () => {
    const problem = problemOrMessage();
    if (!problem) return;
    setNote(null);
    gpu.run({
      backend,
      pass,
      path: pass === 'backward' ? bwdPath : path,
      problem,
      seed: Number(form.seed) || 1,
      checkRows: 4,
      blockSparse: form.blockSparse && problem.mask?.maskMod !== undefined,
    });
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

  return (
    <section ref={gpu.panel} className="wg-panel" aria-label="WebGPU full-size runs">
      <h2>Full-size runs: WebGPU</h2>
      <AdapterStatus probe={probe} />
      <KernelChoice
        pass={pass}
        backend={backend}
        path={path}
        bwdPath={bwdPath}
        paths={paths}
        hasAdapter={probe.state === 'ok'}
        busy={busy}
        setPass={setPass}
        setBackend={setBackend}
        choosePath={choosePath}
        setBwdPath={setBwdPath}
      />
      <PresetRow busy={busy} onPick={pickPreset} />
      <ShapeForm form={form} set={set} onTyped={(k) => touched.current.add(k)} busy={busy} decodesListed={decodesListed} />
      <PathFit path={path} fix={fix} busy={busy} set={set} />
      <div className="wg-row">
        <button type="button" className="primary" onClick={run} disabled={busy}>
          Run
        </button>
        <button type="button" onClick={gpu.cancel} disabled={!busy}>
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
      {gpu.error && (
        <div className="wg-err" role="alert">
          {gpu.error}
        </div>
      )}
      {note && <div className="wg-note">{note}</div>}
      {gpu.report && <RunResult report={gpu.report} problem={gpu.reportProblem} />}
    </section>
  );
}
