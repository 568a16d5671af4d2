// The problem form's side of engine/defaults: which fields the person set themselves, what
// choosing an algorithm does to the form, and the one-click fixes for a problem the hardware
// model cannot schedule. The rules live in the engine; this file only moves values between
// the form (strings, as typed), the hardware views' GPU choice and that table.

import { create } from 'zustand';
import {
  CONFIG_FIELDS,
  defaultsFor,
  dtypeForPass,
  hasKernel,
  misfits,
  scheduleFix,
  type ConfigField,
  type Replaced,
  type WorkingConfig,
  type GpuId,
  type DType,
  hasBackward,
  type Pass,
  fieldsToProblem,
  type ProblemMasks,
} from '../../engine/api.ts';
import { panelSwitches, type ProblemForm, startTile } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { hwState, useHw } from '../store/hw-store.ts';

/** Form fields that are also WorkingConfig fields (all but the GPU). */
const FORM_FIELDS = CONFIG_FIELDS.filter((f): f is Exclude<ConfigField, 'gpu'> => f !== 'gpu');
/** The rest, less the tile: a kernel's tile is left to the engine (empty fields), and a problem's fit never depends on it. */
const SHAPE_FIELDS = FORM_FIELDS.filter((f) => f !== 'blockM' && f !== 'blockN');

interface DefaultsStore {
  /** Per pane: the form fields the person edited since the pane opened. */
  touched: Record<string, ConfigField[]>;
  /** Per pane: what the last algorithm choice replaced of the person's own values. */
  replaced: Record<string, Replaced[]>;
}

export const useDefaults = create<DefaultsStore>()(() => ({ touched: {}, replaced: {} }));

function touchedOf(pane: string): ConfigField[] {
  return useDefaults.getState().touched[pane] ?? [];
}

const positive = (s: string): number | undefined => (/^\s*\d+\s*$/.test(s) && Number(s) > 0 ? Number(s) : undefined);

/** The form's values as a WorkingConfig; fields that do not parse are left out. */
export function formConfig(form: ProblemForm, gpu: string | null): Partial<WorkingConfig> {
  const c: Partial<WorkingConfig> = { dtype: form.dtype };
  for (const f of FORM_FIELDS) {
    if (f === 'dtype') continue;
    const v = positive(form[f]);
    if (v !== undefined) c[f] = v;
  }
  if (gpu !== null) c.gpu = gpu as GpuId;
  return c;
}

/**
 * The form an algorithm's choice brings: the engine's defaults for every field the person did
 * not set, theirs where it fits (engine/defaults/algorithm-defaults.ts). Pure, for the tests.
 */
export function formForAlgorithm(
  form: ProblemForm,
  algorithm: string,
  touched: readonly ConfigField[] = [],
  gpu: string | null = null,
): { form: ProblemForm; gpu: GpuId | null; replaced: Replaced[] } {
  const { config, replaced } = defaultsFor(algorithm, formConfig(form, gpu), touched);
  // A forward-only algorithm takes the form back to the forward pass.
  // Kernel switches set for the previous algorithm go unless the new one has a switch of that name.
  const own = new Set(panelSwitches(algorithm).map((sw) => sw.key));
  const switches = Object.fromEntries(Object.entries(form.switches).filter(([k]) => own.has(k)));
  const next: ProblemForm = { ...form, algorithm, dtype: config.dtype, pass: hasBackward(algorithm) ? form.pass : 'forward', switches };
  for (const f of SHAPE_FIELDS) if (f !== 'dtype') next[f] = String(config[f]);
  // Tiles the person did not type: the exact algorithms' starting tile, else empty, so the engine
  // resolves the kernel's own for the problem of each load. Typed ones stay as typed.
  const start = startTile(algorithm);
  for (const f of ['blockM', 'blockN'] as const) if (!touched.includes(f)) next[f] = start[f];
  // The on-chip-memory mode stays if it was chosen.
  if (!touched.includes('blockM') && !touched.includes('blockN')) next.blockMode = 'explicit';
  return { form: next, gpu: config.gpu, replaced };
}

/** Records that the person edited these form fields (called by the problem panel's inputs). */
export function markTouched(pane: string, fields: readonly string[]): void {
  const mine = fields.filter((f): f is ConfigField => (CONFIG_FIELDS as readonly string[]).includes(f));
  if (mine.length === 0) return;
  const now = touchedOf(pane);
  if (mine.every((f) => now.includes(f))) return;
  useDefaults.setState((s) => ({ touched: { ...s.touched, [pane]: [...new Set([...now, ...mine])] } }));
}

/** A form edit by the person: marked as theirs, so an algorithm chosen later keeps it where it fits. */
export function editForm(pane: string, patch: Partial<ProblemForm>): void {
  markTouched(pane, Object.keys(patch));
  useApp.getState().setForm(pane, patch);
}

/** The person picked an algorithm in a pane's problem panel. */
export function chooseAlgorithm(pane: string, algorithm: string): void {
  const app = useApp.getState();
  const touched = touchedOf(pane);
  const hw = hwState(pane);
  const chosenGpu = hw.gpu[algorithm] ?? null;
  const r = formForAlgorithm(app.problem[pane].form, algorithm, chosenGpu ? [...touched, 'gpu'] : touched, chosenGpu);
  app.setForm(pane, r.form);
  if (r.gpu && chosenGpu && r.gpu !== chosenGpu) useHw.getState().patch(pane, { gpu: { ...hw.gpu, [algorithm]: r.gpu } });
  useDefaults.setState((s) => ({ replaced: { ...s.replaced, [pane]: r.replaced } }));
}

/** The form a change of pass brings: the pass, and a dtype its kernel takes unless the person chose one. */
export function formForPass(form: ProblemForm, pass: Pass, touched: readonly ConfigField[] = []): ProblemForm {
  const c = formConfig(form, null);
  if (SHAPE_FIELDS.some((f) => c[f] === undefined)) return { ...form, pass };
  const { gpu: _, ...shape } = c as WorkingConfig;
  return { ...form, pass, dtype: dtypeForPass(form.algorithm, pass, shape, touched.includes('dtype')) };
}

/** The person chose a pass in a pane's problem panel (or compare's bar, for the shared problem). */
export function choosePass(pane: string, pass: Pass): void {
  const app = useApp.getState();
  app.setForm(pane, formForPass(app.problem[pane].form, pass, touchedOf(pane)));
}

/** The form's masks as the load would run them; none while a mask field does not parse (its own message says so). */
function formMasks(form: ProblemForm): ProblemMasks {
  try {
    const { causal, window, attentionChunk, softcap, mask } = fieldsToProblem(form);
    return { causal, window, attentionChunk, softcap, mask };
  } catch {
    return {};
  }
}

/** What keeps this form's problem, masks included, off the hardware model, and the changes that would fix it. */
export function formMisfit(form: ProblemForm, gpu: string): { lines: string[]; fix: Replaced[] } | null {
  if (!hasKernel(form.algorithm)) return null;
  const c = formConfig(form, gpu);
  if (SHAPE_FIELDS.some((f) => c[f] === undefined)) return null;
  const config = { ...(c as WorkingConfig), ...formMasks(form) };
  const lines = misfits(form.algorithm, config);
  return lines.length === 0 ? null : { lines, fix: scheduleFix(form.algorithm, config) };
}

/** The form with a fix applied (the GPU goes to the hardware views' choice). */
export function applyFixToForm(pane: string, fix: readonly Replaced[]): void {
  const app = useApp.getState();
  const form = app.problem[pane].form;
  const patch: Partial<ProblemForm> = {};
  for (const r of fix) {
    if (r.field === 'gpu') {
      const hw = hwState(pane);
      useHw.getState().patch(pane, { gpu: { ...hw.gpu, [form.algorithm]: r.to } });
    } else if (r.field === 'dtype') patch.dtype = r.to as DType;
    else patch[r.field] = r.to;
  }
  app.setForm(pane, patch);
  useDefaults.setState((s) => ({ replaced: { ...s.replaced, [pane]: [] } }));
}
