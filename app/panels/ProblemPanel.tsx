// The problem: algorithm, shapes, blocks, masks and modifiers, dtype and inputs. What the
// person types stays in the store as typed; "Load problem" validates it and sends it to the
// worker, and a bad value is reported next to the form while the loaded run stays.

import { ALGORITHMS, findDescriptor, isFp8 } from '../../engine/api.ts';
import { formToRequest, withAppliedFeatures, type ProblemForm } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { formDiffersFromRun } from './load-pending.ts';
import { usePane } from '../store/pane-context.ts';
import { CountersTable } from '../views/CountersView.tsx';
import { ImportButton } from '../import/ImportButton.tsx';
import { withImported } from '../import/import-store.ts';
import { PassSwitch } from '../backward/PassSwitch.tsx';
import { chooseAlgorithm, editForm } from '../defaults/form-defaults.ts';
import { FormFitHint } from '../defaults/FitFix.tsx';
import { PrecisionFitHint, lowPrecisionRefusal, refusedLoadMessage } from '../defaults/PrecisionFix.tsx';
import {
  panelSwitches,
  panelSwitchTitle,
  effectiveSwitches,
  forwardOnlySwitches,
  switchOff,
  type PanelSwitch,
} from '../store/problem-form.ts';
import { MaskEditor } from '../mask/MaskEditor.tsx';
import { RunTile } from './RunTile.tsx';

/**
 * The chosen algorithm's kernel switches (panelSwitches): each shows what the next load
 * will use (the person's setting, else the loaded run's, else the kernel's default).
 * FP8-only switches are disabled, with a note, while the dtype is not FP8; a switch whose
 * condition on the others fails (sage's qPerWarp on version 1) is hidden, with a note.
 */
function KernelSwitches({ form, set }: { form: ProblemForm; set: (p: Partial<ProblemForm>) => void }) {
  const { pane } = usePane();
  const applied = useApp((s) => s.problem[pane].applied);
  const switches = panelSwitches(form.algorithm, form.pass);
  const forwardOnly = form.pass === 'backward' ? forwardOnlySwitches(form.algorithm) : [];
  if (switches.length === 0 && forwardOnly.length === 0) return null;
  const fp8 = isFp8(form.dtype);
  const loaded = applied?.algorithm === form.algorithm ? applied.features : undefined;
  const values = effectiveSwitches(form.algorithm, form.switches, loaded, form.pass);
  // Shown as typed while the person types; the effective value otherwise.
  const shown = (sw: PanelSwitch) => form.switches[sw.key] ?? values[sw.key];
  const setSwitch = (key: string, v: boolean | string) => set({ switches: { ...form.switches, [key]: v } });
  const fp8Off = switches.filter((sw) => sw.fp8Only && !fp8);
  const hidden = switches.filter((sw) => !(sw.fp8Only && !fp8) && switchOff(sw, values, form.dtype));
  const title = panelSwitchTitle(form.algorithm);
  return (
    <fieldset className="kernel-switches" aria-label={`${title} switches`}>
      <legend>{title} switches</legend>
      <div className="fields">
        {switches
          .filter((sw) => !hidden.includes(sw))
          .map((sw) => {
            const off = sw.fp8Only && !fp8;
            const hint = off ? `${sw.spec.doc} (FP8 runs only: pick fp8e4m3 or fp8e5m2)` : sw.spec.doc;
            if (typeof sw.spec.default === 'boolean') {
              return (
                <label key={sw.key} title={hint} className="feature">
                  <input
                    type="checkbox"
                    aria-label={sw.label}
                    disabled={off}
                    checked={shown(sw) as boolean}
                    onChange={(e) => setSwitch(sw.key, e.target.checked)}
                  />{' '}
                  {sw.label}
                </label>
              );
            }
            return sw.choices ? (
              <label key={sw.key} title={hint} className="field">
                <span>{sw.label}</span>
                <select aria-label={sw.label} disabled={off} value={String(shown(sw))} onChange={(e) => setSwitch(sw.key, e.target.value)}>
                  {sw.choices.map((c) => (
                    <option key={c} value={String(c)}>
                      {c}
                    </option>
                  ))}
                </select>
              </label>
            ) : (
              <label key={sw.key} title={hint} className="field">
                <span>{sw.label}</span>
                <input
                  aria-label={sw.label}
                  disabled={off}
                  size={4}
                  inputMode="numeric"
                  value={String(shown(sw))}
                  onChange={(e) => setSwitch(sw.key, e.target.value)}
                />
              </label>
            );
          })}
      </div>
      {fp8Off.length > 0 && (
        <p className="dim note">
          {joinLabels(fp8Off)} act{fp8Off.length === 1 ? 's' : ''} on FP8 runs only (dtype fp8e4m3 or fp8e5m2).
        </p>
      )}
      {hidden.map((sw) => (
        <p key={sw.key} className="dim note">
          {sw.label} {switchOff(sw, values, form.dtype)}.
        </p>
      ))}
      {forwardOnly.length > 0 && (
        <p className="dim note" data-testid="forward-only-switches">
          {joinLabels(forwardOnly)} {forwardOnly.length === 1 ? 'is a switch' : 'are switches'} of the forward kernel only; the backward
          runs without {forwardOnly.length === 1 ? 'it' : 'them'}.
        </p>
      )}
    </fieldset>
  );
}

/** "a, b and c" for the switches a note names. */
/** The dtype menu's note for a dtype the algorithm steps but its kernel does not ship. */
function whatIfNote(algorithm: string, dtype: ProblemForm['dtype']): string {
  const note = findDescriptor(algorithm)?.supports.whatIf?.[dtype];
  return note ? ` (${note})` : '';
}

function joinLabels(sws: PanelSwitch[]): string {
  const l = sws.map((sw) => (sw.key === 'seed' ? 'the Hadamard seed' : sw.label));
  return l.length === 1 ? l[0] : `${l.slice(0, -1).join(', ')} and ${l[l.length - 1]}`;
}

function Field({
  label,
  name,
  form,
  set,
  width = 5,
  placeholder,
}: {
  label: string;
  name: keyof ProblemForm;
  form: ProblemForm;
  set: (p: Partial<ProblemForm>) => void;
  width?: number;
  placeholder?: string;
}) {
  return (
    <label className="field">
      <span>{label}</span>
      <input
        aria-label={label}
        value={String(form[name])}
        placeholder={placeholder}
        size={width}
        inputMode="numeric"
        onChange={(e) => set({ [name]: e.target.value } as Partial<ProblemForm>)}
      />
    </label>
  );
}

export function ProblemPanel() {
  const { pane, ctl } = usePane();
  const form = useApp((s) => s.problem[pane].form);
  const status = useApp((s) => s.playback[pane].status);
  const progress = useApp((s) => s.playback[pane].progress);
  const error = useApp((s) => s.playback[pane].error);
  const tooLarge = useApp((s) => s.playback[pane].tooLarge);
  const countersRun = useApp((s) => s.playback[pane].countersRun);
  const applied = useApp((s) => s.problem[pane].applied);
  const pending = status === 'ready' && formDiffersFromRun(form, applied);
  const patch = useApp((s) => s.patchPlayback);
  // Edits are the person's own: an algorithm chosen later keeps them where they fit.
  const set = (p: Partial<ProblemForm>) => editForm(pane, p);

  const request = () => {
    try {
      return formToRequest(form, useApp.getState().problem[pane].applied);
    } catch (e) {
      patch(pane, { error: { place: 'problem', message: (e as Error).message } });
      return undefined;
    }
  };
  const load = () => {
    const req = request();
    if (!req) return;
    // A dtype the algorithm or pass cannot run: the hint under the dtype has the fixes.
    const refusal = lowPrecisionRefusal(form);
    if (refusal) {
      patch(pane, { error: { place: 'problem', message: refusedLoadMessage(form) } });
      return;
    }
    // A reload of the same algorithm keeps the loaded run's switches the panel does not show
    // (set in the hardware views or the lessons).
    const applied = useApp.getState().problem[pane].applied;
    void ctl.load(withImported(pane, withAppliedFeatures(req, applied)));
  };
  const busy = status === 'loading' || status === 'busy';

  return (
    <section className="panel problem" aria-label="Problem">
      <h2>Problem</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          load();
        }}
      >
        <label className="field wide">
          <span>Algorithm</span>
          <select aria-label="Algorithm" value={form.algorithm} onChange={(e) => chooseAlgorithm(pane, e.target.value)}>
            {ALGORITHMS.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
          </select>
        </label>
        <PassSwitch />
        <FormFitHint />
        <div className="fields">
          <Field label="B" name="batch" form={form} set={set} width={3} />
          <Field label="Hq" name="hq" form={form} set={set} width={3} />
          <Field label="Hk" name="hk" form={form} set={set} width={3} />
          <Field label="Nq" name="nq" form={form} set={set} />
          <Field label="Nk" name="nk" form={form} set={set} />
          <Field label="d" name="d" form={form} set={set} width={4} />
          <Field label="dv" name="dv" form={form} set={set} width={4} />
        </div>
        <fieldset>
          <legend>Blocks</legend>
          <label>
            <input
              type="radio"
              name={`${pane}-blocks`}
              checked={form.blockMode === 'explicit'}
              onChange={() => set({ blockMode: 'explicit' })}
            />{' '}
            Br × Bc
          </label>
          <label>
            <input type="radio" name={`${pane}-blocks`} checked={form.blockMode === 'sram'} onChange={() => set({ blockMode: 'sram' })} />{' '}
            from on-chip memory M
          </label>
          <div className="fields">
            {form.blockMode === 'explicit' ? (
              <>
                <Field label="Br" name="blockM" form={form} set={set} width={4} placeholder="auto" />
                <Field label="Bc" name="blockN" form={form} set={set} width={4} placeholder="auto" />
              </>
            ) : (
              <Field label="M (bytes)" name="sramBytes" form={form} set={set} width={7} />
            )}
          </div>
          <RunTile />
        </fieldset>
        <fieldset>
          <legend>Masks and modifiers</legend>
          <label>
            <input type="checkbox" aria-label="Causal" checked={form.causal} onChange={(e) => set({ causal: e.target.checked })} /> causal
          </label>
          <label>
            <input type="checkbox" aria-label="ALiBi" checked={form.alibi} onChange={(e) => set({ alibi: e.target.checked })} /> ALiBi
          </label>
          <div className="fields">
            <Field label="window left" name="windowLeft" form={form} set={set} width={4} />
            <Field label="window right" name="windowRight" form={form} set={set} width={4} />
            <Field label="attention chunk" name="attentionChunk" form={form} set={set} width={5} />
            <Field label="softcap" name="softcap" form={form} set={set} width={4} />
            <Field label="sink" name="sink" form={form} set={set} width={4} />
          </div>
          <MaskEditor form={form} set={set} />
        </fieldset>
        <fieldset>
          <legend>Inputs</legend>
          <div className="fields">
            <label className="field">
              <span>dtype</span>
              <select aria-label="dtype" value={form.dtype} onChange={(e) => set({ dtype: e.target.value as ProblemForm['dtype'] })}>
                <option value="fp32">fp32</option>
                <option value="fp16">fp16</option>
                <option value="bf16">bf16</option>
                <option value="fp8e4m3">fp8e4m3</option>
                <option value="fp8e5m2">fp8e5m2{whatIfNote(form.algorithm, 'fp8e5m2')}</option>
              </select>
            </label>
            <Field label="seed" name="seed" form={form} set={set} width={6} />
            <label className="field">
              <span>distribution</span>
              <select
                aria-label="Input distribution"
                value={form.distribution}
                onChange={(e) => set({ distribution: e.target.value as ProblemForm['distribution'] })}
              >
                <option value="normal">normal</option>
                <option value="large-logits">large logits</option>
                <option value="outlier-row">planted outlier row</option>
                <option value="fa3-outliers">FA3 outliers</option>
                <option value="sink">attention sink</option>
              </select>
            </label>
            {form.distribution === 'outlier-row' && <Field label="outlier row" name="outlierRow" form={form} set={set} width={4} />}
          </div>
          <PrecisionFitHint />
          <ImportButton />
        </fieldset>
        <KernelSwitches form={form} set={set} />
        <div className="row-buttons">
          <button type="submit" className="primary" disabled={busy}>
            Load problem
          </button>
          {pending && (
            <span className="load-pending" role="status" data-testid="load-pending">
              Not loaded yet: the views show the previous run
            </span>
          )}
          {busy && (
            <button type="button" onClick={() => ctl.cancel()}>
              Cancel
            </button>
          )}
        </div>
      </form>
      {progress && (
        <div
          className="progress"
          role="progressbar"
          aria-label="Progress"
          aria-valuenow={Math.round(progress.fraction * 100)}
          aria-valuemin={0}
          aria-valuemax={100}
        >
          <div style={{ width: `${progress.fraction * 100}%` }} />
          <span>{progress.label}</span>
        </div>
      )}
      {error?.place === 'problem' && (
        <p className="error" role="alert">
          {error.message}
        </p>
      )}
      {tooLarge && (
        <div className="too-large" role="alert">
          <p>{tooLarge}</p>
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              const req = request();
              if (req) void ctl.runCounters(withImported(pane, req));
            }}
          >
            Run counters only
          </button>
        </div>
      )}
      {countersRun && (
        <section className="counters-run" aria-label="Counters-only result">
          <p>
            Counters-only run {countersRun.cancelled ? 'cancelled after' : 'finished in'} {countersRun.ms.toFixed(0)} ms,{' '}
            {countersRun.counters.steps} steps:
          </p>
          <CountersTable c={countersRun.counters} />
        </section>
      )}
    </section>
  );
}
