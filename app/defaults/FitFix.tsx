// The one-click fixes for a problem the hardware model cannot schedule: under the problem
// panel's algorithm (before loading), and in the hardware views (after loading, with a
// reload). Both say which field to change to what; the button applies exactly that.

import {
  fixPhrase,
  hasKernel,
  scheduleFix,
  type Replaced,
  type WorkingConfig,
  gpuById,
  type GpuId,
  hasSchedule,
  shapeOf,
  simulateFor,
  type AttentionProblem,
} from '../../engine/api.ts';
import { controllers } from '../store/controllers.ts';
import { withImported } from '../import/import-store.ts';
import { usePane } from '../store/pane-context.ts';
import type { PaneController } from '../store/pane-controller.ts';
import { formToRequest, withAppliedFeatures } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { choiceKey, defaultGpu } from '../store/gpus.ts';
import { useHwPane } from '../store/hw-store.ts';
import { applyFixToForm, formMisfit, useDefaults } from './form-defaults.ts';
import './defaults.css';

const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Loads a pane's form the way the problem panel's "Load problem" does. */
function loadForm(pane: string, ctl: PaneController): void {
  const app = useApp.getState();
  try {
    const req = formToRequest(app.problem[pane].form, app.problem[pane].applied);
    const applied = app.problem[pane].applied;
    void ctl.load(withImported(pane, withAppliedFeatures(req, applied)));
  } catch (e) {
    app.patchPlayback(pane, { error: { place: 'problem', message: (e as Error).message } });
  }
}

/** Under the algorithm: what the last choice replaced, and whether the form as it stands fits the kernel. */
export function FormFitHint() {
  const { pane } = usePane();
  const form = useApp((s) => s.problem[pane].form);
  const gpuChoice = useHwPane(pane, (s) => s.gpu[form.algorithm]);
  const replaced = useDefaults((s) => s.replaced[pane]);
  let misfit: ReturnType<typeof formMisfit> = null;
  try {
    misfit = formMisfit(form, gpuChoice ?? defaultGpu(form.algorithm));
  } catch {
    misfit = null;
  }
  return (
    <>
      {replaced && replaced.length > 0 && (
        <p className="defaults-note" role="status" data-testid="defaults-note">
          Kept your values where this kernel takes them; changed{' '}
          {replaced.map((r) => `${r.field} ${r.from} → ${r.to} (${r.why})`).join('; ')}.
        </p>
      )}
      {misfit && (
        <div className="fit-hint" role="status" data-testid="fit-hint">
          <p>
            The hardware model cannot schedule this on {gpuById(gpuChoice ?? defaultGpu(form.algorithm)).name}: {misfit.lines.join('; ')}.
            {misfit.fix.length > 0 && <> To draw its hardware views, {fixPhrase(misfit.fix)}.</>}
          </p>
          {misfit.fix.length > 0 && (
            <button type="button" onClick={() => applyFixToForm(pane, misfit.fix)}>
              {capitalised(fixPhrase(misfit.fix))}
            </button>
          )}
        </div>
      )}
    </>
  );
}

/**
 * The backward kernels' fix: FA2's and FA3's backward MMAs take fp16 or bf16 only, and an
 * fp32 problem that fits in fp16 gets that change (the CPU backward steps either way).
 */
function backwardFix(algorithm: string, p: AttentionProblem, gpu: string): Replaced[] {
  if (p.dtype !== 'fp32' || !hasSchedule(algorithm, 'backward')) return [];
  const fits = (dtype: AttentionProblem['dtype']) => {
    try {
      simulateFor(algorithm, gpu, shapeOf({ ...p, dtype }), {}, 'backward');
      return true;
    } catch {
      return false;
    }
  };
  return !fits('fp32') && fits('fp16')
    ? [{ field: 'dtype', from: 'fp32', to: 'fp16', why: `the ${algorithm} backward kernel's MMAs take fp16 or bf16` }]
    : [];
}

/** The fix for the loaded run's problem, or [] when no form field is at fault. */
function loadedFix(pane: string, gpu: string): Replaced[] {
  const s = useApp.getState();
  const applied = s.problem[pane]?.applied;
  if (!applied) return [];
  const p = applied.problem;
  if (applied.pass === 'backward') return backwardFix(applied.algorithm, p, gpu);
  const c: WorkingConfig = {
    batch: p.batch,
    hq: p.hq,
    hk: p.hk,
    nq: p.nq,
    nk: p.nk,
    d: p.d,
    dv: p.dv,
    dtype: p.dtype,
    blockM: applied.blocks.blockM ?? 16,
    blockN: applied.blocks.blockN ?? 16,
    gpu: gpu as GpuId,
    causal: p.causal,
    window: p.window,
    softcap: p.softcap,
    mask: p.mask,
  };
  try {
    return scheduleFix(applied.algorithm, c);
  } catch {
    return [];
  }
}

/**
 * The fix for the pane's loaded run on the chosen GPU (or the kernel's default one), or [] when
 * the run has no hardware schedule at all: the views stay mounted a moment after another
 * algorithm loads, perhaps one with no kernel, or none for this pass (FA1's backward).
 */
export function loadedFitFix(pane: string, gpuChoice: string | undefined): Replaced[] {
  const applied = useApp.getState().problem[pane]?.applied;
  if (!applied) return [];
  const pass = applied.pass ?? 'forward';
  if (pass === 'forward' ? !hasKernel(applied.algorithm) : !hasSchedule(applied.algorithm, pass)) return [];
  return loadedFix(pane, gpuChoice ?? defaultGpu(applied.algorithm, pass));
}

/**
 * In a hardware view that has no schedule: the change that gives it one, and a button that
 * makes it and reloads. A compare pane's dtype and head dims belong to the shared problem
 * (the Debugger tab's), so its fix reloads that one and every pane follows.
 */
export function LoadedFitFix() {
  const { pane, ctl } = usePane();
  const algorithm = useApp((s) => s.problem[pane]?.applied?.algorithm);
  const pass = useApp((s) => s.problem[pane]?.applied?.pass) ?? 'forward';
  const gpuChoice = useHwPane(pane, (s) => (algorithm ? s.gpu[choiceKey(algorithm, pass)] : undefined));
  useApp((s) => s.problem[pane]?.applied);
  const fix = loadedFitFix(pane, gpuChoice);
  if (fix.length === 0) return null;
  const apply = () => {
    const compare = pane.startsWith('cmp');
    const shared = compare ? 'main' : pane;
    const mainCtl = compare ? controllers.get('main') : ctl;
    applyFixToForm(
      pane,
      fix.filter((r) => r.field === 'gpu'),
    );
    const rest = fix.filter((r) => r.field !== 'gpu');
    if (rest.length > 0 && mainCtl) {
      applyFixToForm(shared, rest);
      loadForm(shared, mainCtl);
    }
  };
  return (
    <p className="fit-fix" data-testid="hw-fix">
      To draw it, {fixPhrase(fix)}
      {pane.startsWith('cmp') && fix.some((r) => r.field !== 'gpu') ? ' (in the shared problem)' : ''}.{' '}
      <button type="button" onClick={apply}>
        {capitalised(fixPhrase(fix))} and reload
      </button>
    </p>
  );
}
