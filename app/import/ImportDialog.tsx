// "Load tensors…": drop or pick .npy / .safetensors files, see what they hold, choose Q, K,
// V (and optional sinks / ALiBi slopes), the layout, batch and head, then load. Parsing
// and checking happen in the import worker; a bad file or choice is explained here and
// the pane's loaded run stays as it was until a checked choice is loaded.

import { useEffect, useMemo, useRef, useState } from 'react';
import {
  detectLayout,
  guessRole,
  type FileListing,
  type Layout,
  type TensorChoice,
  type TensorRef,
  type TensorInfo,
  isIntegerStorage,
  type LoadRequest,
} from '../../engine/api.ts';
import { usePane } from '../store/pane-context.ts';
import { formToRequest } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { importWorker, type InspectedFile } from './import-api.ts';
import './import.css';
import { useImport } from './import-store.ts';
import { ServingHandoff } from '../serving/ServingHandoff.tsx';

type Role = 'q' | 'k' | 'v' | 'sinks' | 'alibi';
const ROLES: { role: Role; label: string; optional: boolean }[] = [
  { role: 'q', label: 'Q', optional: false },
  { role: 'k', label: 'K', optional: false },
  { role: 'v', label: 'V', optional: false },
  { role: 'sinks', label: 'sinks', optional: true },
  { role: 'alibi', label: 'ALiBi slopes', optional: true },
];

const refKey = (r: TensorRef) => `${r.file}/${r.tensor}`;
const fromKey = (k: string): TensorRef | undefined => {
  const i = k.indexOf('/');
  return i < 0 ? undefined : { file: Number(k.slice(0, i)), tensor: k.slice(i + 1) };
};
const bytes = (n: number) =>
  n >= 2 ** 30
    ? `${(n / 2 ** 30).toFixed(2)} GB`
    : n >= 2 ** 20
      ? `${(n / 2 ** 20).toFixed(1)} MB`
      : n >= 1024
        ? `${(n / 1024).toFixed(1)} kB`
        : `${n} B`;

function guessPicks(listings: (FileListing | undefined)[]): Partial<Record<Role, string>> {
  const picks: Partial<Record<Role, string>> = {};
  const all: { ref: TensorRef; info: TensorInfo }[] = [];
  listings.forEach((l, file) => l?.tensors.forEach((info) => all.push({ ref: { file, tensor: info.name }, info })));
  for (const { ref, info } of all) {
    const role = guessRole(info.name);
    if (role && !picks[role]) picks[role] = refKey(ref);
  }
  // Three rank-3/4 tensors and no names to go by: take them in order.
  const big = all.filter((t) => t.info.shape.length >= 3);
  if (!picks.q && !picks.k && !picks.v && big.length === 3) [picks.q, picks.k, picks.v] = big.map((t) => refKey(t.ref));
  return picks;
}

export default function ImportDialog({ onClose }: { onClose: () => void }) {
  const { pane, ctl } = usePane();
  const [files, setFiles] = useState<File[]>([]);
  const [inspected, setInspected] = useState<InspectedFile[]>([]);
  const [picks, setPicks] = useState<Partial<Record<Role, string>>>({});
  const [layout, setLayout] = useState<Layout>('BHND');
  const [batch, setBatch] = useState('0');
  const [head, setHead] = useState('0');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const dialog = useRef<HTMLDivElement>(null);

  useEffect(() => {
    dialog.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  const listings = inspected.map((f) => (f.ok ? f.listing : undefined));
  const infoOf = (key?: string): TensorInfo | undefined => {
    const r = key ? fromKey(key) : undefined;
    return r ? listings[r.file]?.tensors.find((t) => t.name === r.tensor) : undefined;
  };
  const q = infoOf(picks.q);
  const k = infoOf(picks.k);
  const v = infoOf(picks.v);
  const detection = useMemo(() => (q && k && v ? detectLayout(q, k, v) : undefined), [q, k, v]);
  useEffect(() => {
    if (detection?.fits.length === 1) setLayout(detection.fits[0]);
  }, [detection]);

  const addFiles = async (list: File[]) => {
    if (list.length === 0) return;
    setError(null);
    setBusy(true);
    try {
      const found = await importWorker().inspect(list);
      const nextFiles = [...files, ...list];
      const nextInspected = [...inspected, ...found];
      setFiles(nextFiles);
      setInspected(nextInspected);
      setPicks((p) => ({ ...guessPicks(nextInspected.map((f) => (f.ok ? f.listing : undefined))), ...p }));
    } catch (e) {
      setError(`Reading the files failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      setBusy(false);
    }
  };

  const load = async () => {
    setError(null);
    const missing = ROLES.filter((r) => !r.optional && !picks[r.role]).map((r) => r.label);
    if (missing.length) return setError(`Pick a tensor for ${missing.join(', ')}.`);
    const b = Number(batch);
    const h = Number(head);
    if (!/^\d+$/.test(batch.trim())) return setError(`batch: must be a whole number ≥ 0, got "${batch}"`);
    if (!/^\d+$/.test(head.trim())) return setError(`head: must be a whole number ≥ 0, got "${head}"`);
    let base: LoadRequest;
    try {
      base = formToRequest(useApp.getState().problem[pane].form);
    } catch (e) {
      return setError(`The problem panel has a bad value (${(e as Error).message}); fix it first.`);
    }
    const choice: TensorChoice = { q: fromKey(picks.q!)!, k: fromKey(picks.k!)!, v: fromKey(picks.v!)!, layout, batch: b, head: h };
    if (picks.sinks) choice.sinks = fromKey(picks.sinks);
    if (picks.alibi) choice.alibi = fromKey(picks.alibi);
    setBusy(true);
    try {
      const checked = await importWorker().check(files, choice, base.problem);
      const used = [...new Set([choice.q.file, choice.k.file, choice.v.file])].map((i) => files[i].name).join(' · ');
      useImport.getState().set(pane, {
        spec: { ...choice, files, names: files.map((f) => f.name) },
        full: checked.full,
        label: `${used}, batch ${b}, head ${h} (${layout})`,
      });
      const p = checked.problem;
      useApp.getState().setForm(pane, {
        batch: '1',
        hq: '1',
        hk: '1',
        nq: String(p.nq),
        nk: String(p.nk),
        d: String(p.d),
        dv: String(p.dv),
        dtype: p.dtype,
        alibi: false,
      });
      onClose();
      await ctl.load({ ...base, problem: p, tensors: { ...choice, files, names: files.map((f) => f.name) } });
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  const options = listings.flatMap((l, file) =>
    l
      ? l.tensors.map((t) => ({
          key: refKey({ file, tensor: t.name }),
          text: `${l.kind === 'npy' ? t.name : `${l.name}: ${t.name}`} · ${t.dtype} [${t.shape.join(', ')}]`,
        }))
      : [],
  );

  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: a click beside the dialog is the pointer's way out; the keyboard's is Escape (handled above)
    <div className="modal-backdrop" role="presentation" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div className="modal import-dialog" role="dialog" aria-modal="true" aria-label="Load tensors" tabIndex={-1} ref={dialog}>
        <h2>Load tensors</h2>
        <section
          className={`dropzone${dragging ? ' over' : ''}`}
          data-testid="dropzone"
          aria-label="Drop files here"
          onDragOver={(e) => {
            e.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={(e) => {
            e.preventDefault();
            setDragging(false);
            void addFiles(Array.from(e.dataTransfer.files));
          }}
        >
          <p>
            Drop <code>.npy</code> (numpy.save) or <code>.safetensors</code> (safetensors save_file) files here, or{' '}
            <button type="button" onClick={() => input.current?.click()}>
              choose files…
            </button>
          </p>
          <p className="dim">Only the headers and the chosen head are read, so files of several GB are fine.</p>
          <input
            ref={input}
            type="file"
            multiple
            accept=".npy,.safetensors"
            aria-label="Tensor files"
            hidden
            onChange={(e) => {
              void addFiles(Array.from(e.target.files ?? []));
              e.target.value = '';
            }}
          />
        </section>
        {inspected.length > 0 && (
          <ul className="file-list" aria-label="Files found">
            {inspected.map((f, i) =>
              f.ok ? (
                <li key={i}>
                  <strong>{f.listing.name}</strong>{' '}
                  <span className="dim">
                    ({bytes(f.listing.size)}, {f.listing.kind})
                  </span>
                  <ul>
                    {f.listing.tensors.map((t) => (
                      <li key={t.name}>
                        {t.name} · {t.dtype} [{t.shape.join(', ')}]
                      </li>
                    ))}
                  </ul>
                </li>
              ) : (
                <li key={i} className="error" role="alert">
                  {f.message}
                </li>
              ),
            )}
          </ul>
        )}
        {listings.some((l) => l?.tensors.some((t) => isIntegerStorage(t.dtype))) && <ServingHandoff files={files} onDone={onClose} />}
        {options.length > 0 && (
          <div className="fields picks">
            {ROLES.map((r) => (
              <label key={r.role} className="field">
                <span>{r.label}</span>
                <select
                  aria-label={`Tensor for ${r.label}`}
                  value={picks[r.role] ?? ''}
                  onChange={(e) => setPicks((p) => ({ ...p, [r.role]: e.target.value || undefined }))}
                >
                  <option value="">{r.optional ? '(none)' : '(pick one)'}</option>
                  {options.map((o) => (
                    <option key={o.key} value={o.key}>
                      {o.text}
                    </option>
                  ))}
                </select>
              </label>
            ))}
          </div>
        )}
        {q && k && v && (
          <fieldset>
            <legend>Layout</legend>
            {(['BHND', 'BNHD'] as const).map((l) => (
              <label key={l}>
                <input type="radio" name="import-layout" checked={layout === l} onChange={() => setLayout(l)} />{' '}
                {l === 'BHND' ? 'BHND (batch, heads, seq, dim)' : 'BNHD (batch, seq, heads, dim)'}
              </label>
            ))}
            <p className="dim" data-testid="layout-detection">
              {detection &&
                detection.fits.length === 1 &&
                `Detected ${detection.fits[0]}: the other layout does not fit (${detection.reasons[detection.fits[0] === 'BHND' ? 'BNHD' : 'BHND']}).`}
              {detection && detection.fits.length === 2 && 'Both layouts fit these shapes: pick the one the tensors were saved in.'}
              {detection && detection.fits.length === 0 && `Neither layout fits: ${detection.reasons.BHND}`}
            </p>
            <div className="fields">
              <label className="field">
                <span>batch</span>
                <input aria-label="Import batch" value={batch} size={4} onChange={(e) => setBatch(e.target.value)} />
              </label>
              <label className="field">
                <span>head</span>
                <input aria-label="Import head" value={head} size={4} onChange={(e) => setHead(e.target.value)} />
              </label>
            </div>
          </fieldset>
        )}
        {error && (
          <p className="error" role="alert" data-testid="import-error">
            {error}
          </p>
        )}
        <div className="row-buttons">
          <button type="button" className="primary" disabled={busy || options.length === 0} onClick={() => void load()}>
            Load these tensors
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          {busy && <span className="dim">reading…</span>}
        </div>
      </div>
    </div>
  );
}
