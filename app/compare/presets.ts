// Ready-made comparisons: a shared problem and a set of panes that answer one question.
// "FP8 study" sets FA3's FP16 path beside its FP8 path per tensor and with block
// quantization plus incoherent processing, and SageAttention 2, on the FA3 paper's outlier
// inputs (every entry N(0,1) plus N(0,100) with probability 0.001), so the difference
// table's error rows show what block scales, the Hadamard rotation and INT8 with smoothed K buy.

import { DEFAULT_FORM, formToRequest, type ProblemForm } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { useImport } from '../import/import-store.ts';
import { messageOf } from '../store/pane-controller.ts';
import { useCompare } from './compare-store.ts';
import { controllers } from '../store/controllers.ts';
import { COMPARE_VIEWS_DEFAULT, type ComparePaneConfig } from './pane-config.ts';
import { SHARED_PANE } from './shared-request.ts';
import { BUILT_IN_ALGORITHMS } from '../../engine/api.ts';

export interface ComparePreset {
  id: string;
  name: string;
  /** What the preset shows, for the notice once it is loaded. */
  about: string;
  form: Partial<ProblemForm>;
  panes: ComparePaneConfig[];
  /** The pair the output difference starts on. */
  diff: [number, number];
}

const tile = { blockM: '128', blockN: '128' };
const views = () => [...COMPARE_VIEWS_DEFAULT];

/**
 * d = 128 and 128×128 tiles as in the FA3 paper's experiment, at 128 queries over 512 keys so
 * four panes load in a few seconds in a browser (fa3 traces about 7 MB, sage's 19 MB). At this size the
 * outliers are few (about 130 of Q, K, V's 160k entries), so the FP8 gap depends on the draw:
 * per-tensor over block + incoherent RMSE is 1.1–2.4× over seeds 1–6; seed 2 gives 1.7×.
 * engine/lowprec/fa3-fp8.test.ts reproduces the paper's table at N = 1024.
 */
export const FP8_STUDY: ComparePreset = {
  id: 'fp8-study',
  name: 'FP8 study',
  about:
    "FA3 in fp16 | FA3 FP8 per tensor (block quantization and incoherent processing off) | FA3 FP8 with block quantization + incoherent processing | SageAttention 2 (INT8 Q·Kᵀ, FP8 P·V), on the FA3 paper's outlier inputs (Nq = 128, Nk = 512, d = 128, seed 2)",
  form: {
    // Every field not named here is the form's default (no mask, no modifiers).
    ...DEFAULT_FORM,
    algorithm: BUILT_IN_ALGORITHMS.fa3.id,
    nq: '128',
    nk: '512',
    d: '128',
    dv: '128',
    blockMode: 'explicit',
    ...tile,
    dtype: 'fp16',
    seed: '2',
    distribution: 'fa3-outliers',
    // The preset decides every kernel switch of its shared problem: one the person left set
    // in the Debugger tab (reverseKv off, an FP8 quantization switch) is not carried over.
    switches: {},
  },
  panes: [
    { algorithm: BUILT_IN_ALGORITHMS.fa3.id, dtype: 'fp16', ...tile, features: {}, views: views() },
    {
      algorithm: BUILT_IN_ALGORITHMS.fa3.id,
      dtype: 'fp8e4m3',
      ...tile,
      features: { blockQuant: false, incoherent: false },
      views: views(),
    },
    { algorithm: BUILT_IN_ALGORITHMS.fa3.id, dtype: 'fp8e4m3', ...tile, features: { blockQuant: true, incoherent: true }, views: views() },
    // SageAttention 2 (INT8 Q·Kᵀ with K smoothing, FP8 P·V) on fp16 tensors, in its kernel's own tile.
    { algorithm: BUILT_IN_ALGORITHMS.sage.id, dtype: 'fp16', blockM: '', blockN: '', features: { version: 2 }, views: views() },
  ],
  diff: [1, 2],
};

/**
 * One problem under two masks, on the same algorithm and tiles: a causal mask beside a causal
 * sliding window of 32 keys. The Counters and Block mask views show the tiles and FLOPs the
 * window skips; the output difference is the attention the window leaves out.
 */
export const MASK_STUDY: ComparePreset = {
  id: 'mask-study',
  name: 'Two masks',
  about:
    'FA2 on one problem (Nq = Nk = 128, d = 32, 16×16 tiles) under mask_mod causal | sliding window of 32 keys: compare the skipped tiles in Counters and Block mask, and what the window changes in O',
  form: {
    ...DEFAULT_FORM,
    algorithm: BUILT_IN_ALGORITHMS.fa2.id,
    nq: '128',
    nk: '128',
    d: '32',
    dv: '32',
    blockMode: 'explicit',
    blockM: '16',
    blockN: '16',
    switches: {},
  },
  panes: [
    {
      algorithm: BUILT_IN_ALGORITHMS.fa2.id,
      blockM: '16',
      blockN: '16',
      features: {},
      views: [...views(), 'block-mask'],
      maskMod: 'causal',
    },
    {
      algorithm: BUILT_IN_ALGORITHMS.fa2.id,
      blockM: '16',
      blockN: '16',
      features: {},
      views: [...views(), 'block-mask'],
      maskMod: 'sliding_window:32',
    },
  ],
  diff: [0, 1],
};

export const PRESETS: readonly ComparePreset[] = [FP8_STUDY, MASK_STUDY];

/** The shared problem's form once the preset is applied over the Debugger tab's form. */
export function presetForm(current: ProblemForm, preset: ComparePreset): ProblemForm {
  return { ...current, ...preset.form };
}

/**
 * Replaces the shared problem (the Debugger tab's, loaded there first) and the panes. The
 * panes wait while the shared problem loads, then each loads once. Tensors loaded from
 * files are let go: the preset defines its own inputs.
 */
export async function applyPreset(preset: ComparePreset): Promise<void> {
  const main = controllers.get(SHARED_PANE);
  const app = useApp.getState();
  const form = presetForm(app.problem[SHARED_PANE]?.form ?? DEFAULT_FORM, preset);
  const hadFiles = !!useImport.getState().imported[SHARED_PANE];
  useCompare.setState({ applying: true, syncNotice: undefined });
  try {
    app.setForm(SHARED_PANE, preset.form);
    useImport.getState().set(SHARED_PANE, undefined);
    if (main) await main.load(formToRequest(form));
    const loaded = useApp.getState().problem[SHARED_PANE]?.applied;
    const failed = useApp.getState().playback[SHARED_PANE]?.error?.message ?? useApp.getState().playback[SHARED_PANE]?.tooLarge;
    useCompare.setState({
      panes: preset.panes.map((p) => structuredClone(p)),
      diff: [...preset.diff],
      results: [],
      failures: [],
      syncNotice:
        failed || !loaded
          ? `${preset.name}: the shared problem did not load (${failed ?? 'no run'}); the panes run the previous one.`
          : `${preset.name}: ${preset.about}.${hadFiles ? ' The tensors loaded from files were let go (the preset draws its own inputs).' : ''}`,
    });
  } catch (e) {
    useCompare.setState({ syncNotice: `${preset.name} could not be loaded: ${messageOf(e)}` });
  } finally {
    useCompare.setState({ applying: false });
  }
}
