// The problem panel's mask editor: mask_mod and score_mod as text in the mask language, a
// preset menu that fills the text, the text a preset runs as, and the first mistake with a
// caret under its column, checked as the person types.

import { useId } from 'react';
import { MASK_PRESETS, MAX_AUX_TEXT, MaskSpecError, checkMaskSpec, maskSpecFrom, parseAuxText, parsePresetRef } from '../../engine/api.ts';
import type { ProblemForm } from '../store/problem-form.ts';

type Key = 'maskMod' | 'scoreMod';

/** What the editor reads and writes: the two texts and the dims presets scale with (the step debugger's and the WebGPU panel's forms both hold them). */
type MaskForm = Pick<ProblemForm, Key | 'maskAux' | 'hq' | 'nq' | 'nk'>;

interface Checked {
  /** The text that runs, when the box holds a preset reference. */
  runs?: string;
  error?: { column?: number; message: string };
}

function intOr(v: string, fallback: number): number {
  const n = Number(v);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

export function checkBox(key: Key, text: string, dims: { hq: number; nq: number; nk: number }, auxText = ''): Checked {
  const ref = text.trim();
  if (ref === '') return {};
  let aux: Record<string, number[]> | undefined;
  try {
    aux = parseAuxText(auxText);
  } catch {
    // The aux box shows its own mistake; the text is checked as if it had none.
  }
  try {
    const spec = maskSpecFrom({ [key]: ref }, dims);
    if (aux) spec.aux = { ...aux, ...spec.aux };
    checkMaskSpec(spec);
    return parsePresetRef(ref) ? { runs: spec[key] } : {};
  } catch (e) {
    if (e instanceof MaskSpecError) return { error: { column: e.column, message: e.reason } };
    return { error: { message: (e as Error).message } };
  }
}

function MaskBox({
  k,
  label,
  placeholder,
  form,
  set,
}: {
  k: Key;
  label: string;
  placeholder: string;
  form: MaskForm;
  set: (p: Partial<MaskForm>) => void;
}) {
  const id = useId();
  const kind = k === 'maskMod' ? 'mask_mod' : 'score_mod';
  const dims = { hq: intOr(form.hq, 1), nq: intOr(form.nq, 64), nk: intOr(form.nk, 64) };
  const text = form[k];
  const c = checkBox(k, text, dims, form.maskAux);
  const presets = MASK_PRESETS.filter((p) => p.kind === kind);
  const chosen = parsePresetRef(text)?.preset.id ?? '';
  return (
    <div className="mask-box">
      <label className="field">
        <span>{label}</span>
        <select
          aria-label={`${label} preset`}
          value={chosen}
          onChange={(e) => {
            const p = presets.find((x) => x.id === e.target.value);
            set({ [k]: p ? (p.params.length ? `${p.id}:${p.params.map((q) => q.default(dims)).join(',')}` : p.id) : '' });
          }}
        >
          <option value="">{text.trim() && !chosen ? 'own text' : 'none'}</option>
          {presets.map((p) => (
            <option key={p.id} value={p.id} title={p.help}>
              {p.label}
            </option>
          ))}
        </select>
      </label>
      <input
        aria-label={`${label} text`}
        aria-describedby={c.error ? `${id}-err` : c.runs ? `${id}-runs` : undefined}
        aria-invalid={c.error ? true : undefined}
        className="mask-text"
        spellCheck={false}
        autoComplete="off"
        placeholder={placeholder}
        value={text}
        maxLength={1000}
        onChange={(e) => set({ [k]: e.target.value } as Partial<MaskForm>)}
      />
      {c.error?.column !== undefined && (
        <pre className="mask-caret" aria-hidden="true">
          {`${text.replace(/[^\t]/g, ' ').slice(0, c.error.column - 1)}^`}
        </pre>
      )}
      {c.error && (
        <p id={`${id}-err`} className="error mask-error" role="status">
          {kind}: {c.error.message}
        </p>
      )}
      {c.runs && (
        <p id={`${id}-runs`} className="dim mask-runs">
          runs as <code>{c.runs}</code>
        </p>
      )}
    </div>
  );
}

/** The aux arrays' text box and its first mistake. */
function AuxBox({ form, set }: { form: MaskForm; set: (p: Partial<MaskForm>) => void }) {
  const id = useId();
  const text = form.maskAux ?? '';
  let error: string | undefined;
  try {
    parseAuxText(text);
  } catch (e) {
    error = e instanceof MaskSpecError ? e.reason : (e as Error).message;
  }
  return (
    <div className="mask-box">
      <label className="field">
        <span>aux arrays</span>
        <input
          aria-describedby={error ? `${id}-err` : undefined}
          aria-invalid={error ? true : undefined}
          className="mask-text"
          spellCheck={false}
          autoComplete="off"
          placeholder="e.g. doc = 0*16, 1*48; slope = 0.5, 0.25"
          value={text}
          maxLength={MAX_AUX_TEXT}
          onChange={(e) => set({ maskAux: e.target.value })}
        />
      </label>
      {error && (
        <p id={`${id}-err`} className="error mask-error" role="status">
          aux arrays: {error}
        </p>
      )}
    </div>
  );
}

export function MaskEditor({ form, set }: { form: MaskForm; set: (p: Partial<MaskForm>) => void }) {
  return (
    <div className="mask-editor">
      <MaskBox k="maskMod" label="mask_mod" placeholder="e.g. kv_idx <= q_idx && q_idx - kv_idx < 16" form={form} set={set} />
      <MaskBox k="scoreMod" label="score_mod" placeholder="e.g. score - 0.1 * abs(q_idx - kv_idx)" form={form} set={set} />
      <AuxBox form={form} set={set} />
    </div>
  );
}
