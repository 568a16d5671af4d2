// Serving layouts: a packed variable-length batch (cu_seqlens) or a paged K/V cache (block
// table), generated from chosen sequence lengths and page size or read from files, stepped
// through with any algorithm. The views show the indirection: which packed rows and keys a
// tile covers, which physical pages a K/V tile came from.
import './serving.css';

import { useEffect, useState } from 'react';
import {
  ALGORITHMS,
  DEFAULT_ALGORITHM,
  DESCRIPTORS,
  findDescriptor,
  totalBytes,
  type HbmTensor,
  type ServingRun,
  type ServingStep,
} from '../../engine/api.ts';

/** The algorithm a paged cache starts on when the form still holds the plain default: the decoding kernel. */
const PAGED_DEFAULT = DESCRIPTORS.find((d) => d.serving.pagedDefault)?.id;
import { PAGED_ROLES, VARLEN_ROLES } from './serving-api.ts';
import { useServing } from './serving-store.ts';
import { PagedView } from './PagedView.tsx';
import { SmemPagesView } from './SmemPagesView.tsx';
import { seqColour } from './serving-colours.ts';
import { ServingKernels } from './ServingKernels.tsx';
import { VarlenView } from './VarlenView.tsx';

function isTyping(t: EventTarget | null): boolean {
  return (
    t instanceof HTMLElement &&
    (t.tagName === 'SELECT' ||
      t.tagName === 'TEXTAREA' ||
      (t.tagName === 'INPUT' && !['checkbox', 'radio', 'range', 'button', 'file'].includes((t as HTMLInputElement).type)))
  );
}

/** "12, 40,0" → [12, 40, 0]; a message naming the field otherwise. */
export function parseLengths(field: string, text: string): number[] | string {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.length === 0 || parts.some((p) => !/^\d+$/.test(p)))
    return `${field}: '${text}' is not a comma-separated list of whole numbers`;
  return parts.map(Number);
}

function ProblemForm() {
  const form = useServing((s) => s.form);
  const setForm = useServing((s) => s.setForm);
  const load = useServing((s) => s.load);
  const status = useServing((s) => s.status);
  const [qText, setQText] = useState(form.seqlensQ.join(', '));
  const [kText, setKText] = useState(form.seqlensK.join(', '));
  const [formError, setFormError] = useState<string>();
  useEffect(() => {
    setQText(form.seqlensQ.join(', '));
    setKText(form.seqlensK.join(', '));
  }, [form.seqlensQ, form.seqlensK]);
  const paged = form.layout === 'paged';
  const fromFiles = useServing((st) => st.source === 'files' && st.run !== undefined);
  const submit = () => {
    const q = paged ? form.seqlensQ : parseLengths('Query lengths', qText);
    const k = parseLengths(paged ? 'Cache lengths' : 'Key lengths', kText);
    if (typeof q === 'string' || typeof k === 'string') {
      setFormError(typeof q === 'string' ? q : (k as string));
      return;
    }
    setFormError(undefined);
    setForm({ seqlensQ: q, seqlensK: k });
    void load();
  };
  const num = (key: 'hq' | 'hk' | 'd' | 'nq' | 'pageSize' | 'seed' | 'splits', label: string, min = 0) => (
    <label>
      {label}
      <input type="number" min={min} value={form[key]} onChange={(e) => setForm({ [key]: Number(e.target.value) })} />
    </label>
  );
  return (
    <form
      className="serving-form"
      aria-label="Serving problem"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      {fromFiles && (
        <p className="dim" data-testid="files-note">
          The run shown uses tensors from files; the fields below describe generated inputs, which Load problem puts in its place.
        </p>
      )}
      <fieldset className="layout-pick">
        <legend>Layout</legend>
        {(['varlen', 'paged'] as const).map((l) => (
          <label key={l}>
            <input
              type="radio"
              name="serving-layout"
              checked={form.layout === l}
              onChange={() =>
                setForm({
                  layout: l,
                  algorithm: l === 'paged' && form.algorithm === DEFAULT_ALGORITHM ? (PAGED_DEFAULT ?? form.algorithm) : form.algorithm,
                })
              }
            />
            {l === 'varlen' ? 'Packed varlen (cu_seqlens)' : 'Paged K/V cache (block table)'}
          </label>
        ))}
      </fieldset>
      <label>
        Algorithm
        <select value={form.algorithm} onChange={(e) => setForm({ algorithm: e.target.value })}>
          {ALGORITHMS.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name}
            </option>
          ))}
        </select>
      </label>
      {!paged && (
        <label>
          Query lengths
          <input type="text" value={qText} onChange={(e) => setQText(e.target.value)} aria-describedby="lens-help" />
        </label>
      )}
      <label>
        {paged ? 'Cache lengths' : 'Key lengths'}
        <input type="text" value={kText} onChange={(e) => setKText(e.target.value)} aria-describedby="lens-help" />
      </label>
      <span id="lens-help" className="dim">
        one per sequence, comma-separated; 0 is allowed
      </span>
      {paged && num('nq', 'Nq (query rows; 1 = decode)', 1)}
      {paged && num('pageSize', 'Page size', 1)}
      {num('hq', 'Hq', 1)}
      {num('hk', 'Hk', 1)}
      {num('d', 'd', 1)}
      {findDescriptor(form.algorithm)?.serving.splits && num('splits', 'Splits (0 = heuristic)')}
      {num('seed', 'Seed')}
      <label className="check">
        <input type="checkbox" checked={form.causal} onChange={(e) => setForm({ causal: e.target.checked })} />
        causal (bottom-right per sequence)
      </label>
      <button type="submit" className="primary" disabled={status === 'running'}>
        {status === 'running' ? 'Running…' : 'Load problem'}
      </button>
      {formError && (
        <p role="alert" className="error">
          {formError}
        </p>
      )}
      <FilesForm />
    </form>
  );
}

function FilesForm() {
  const form = useServing((s) => s.form);
  const loadFiles = useServing((s) => s.loadFiles);
  const [files, setFiles] = useState<Record<string, File>>({});
  const [qLayout, setQLayout] = useState<'bnhd' | 'bhnd'>('bnhd');
  const roles = form.layout === 'varlen' ? VARLEN_ROLES : PAGED_ROLES;
  const missing = roles.filter((r) => !files[r]);
  return (
    <details className="serving-files">
      <summary>Load tensors…</summary>
      <p className="dim">
        {form.layout === 'varlen'
          ? 'q [total_q, Hq, d], k [total_k, Hk, d], v [total_k, Hk, dv]; cu_seqlens int32 [B + 1].'
          : 'q [B, Nq, Hq, d] (or bhnd), caches [num_pages, page_size, Hk, d], block_table int32 [B, max_pages], cache_seqlens int32 [B].'}{' '}
        .npy or .safetensors (one tensor); the algorithm, causal and splits above apply.
      </p>
      {roles.map((r) => (
        <label key={r}>
          {r}
          <input
            type="file"
            accept=".npy,.safetensors"
            aria-label={`${r} file`}
            onChange={(e) => setFiles((f) => ({ ...f, [r]: e.target.files![0] }))}
          />
        </label>
      ))}
      {form.layout === 'paged' && (
        <label>
          q layout
          <select value={qLayout} onChange={(e) => setQLayout(e.target.value as 'bnhd' | 'bhnd')}>
            <option value="bnhd">bnhd [B, Nq, Hq, d]</option>
            <option value="bhnd">bhnd [B, Hq, Nq, d]</option>
          </select>
        </label>
      )}
      <button
        type="button"
        disabled={missing.length > 0}
        title={missing.length ? `choose ${missing.join(', ')}` : undefined}
        onClick={() =>
          void loadFiles({ layout: form.layout, files, qLayout, causal: form.causal, algorithm: form.algorithm, splits: form.splits })
        }
      >
        Run on files
      </button>
    </details>
  );
}

function describe(s: ServingStep): string {
  const where = s.qBlock >= 0 ? `Q tile ${s.qBlock}${s.kvBlock >= 0 ? `, K/V tile ${s.kvBlock}` : ''}` : 'whole sequence';
  const split = s.split !== undefined ? `, split ${s.split}` : '';
  const pages = s.pages ? `, pages ${s.pages.join(', ')}` : '';
  const tensors = s.tensors ? ` ${s.tensors.join(' ')}` : '';
  return `${s.kind}${tensors} — sequence ${s.b}, head ${s.h}, ${where}${split}${pages} (${s.line})`;
}

function Transport({ run }: { run: ServingRun }) {
  const step = useServing((s) => s.step);
  const seek = useServing((s) => s.seek);
  const n = run.steps.length;
  return (
    <fieldset className="serving-transport bare" aria-label="Serving transport">
      <button type="button" onClick={() => seek(0)} aria-label="First step">
        |◀
      </button>
      <button type="button" onClick={() => seek(step - 1)} aria-label="Step back">
        ◀
      </button>
      <button type="button" onClick={() => seek(step + 1)} aria-label="Step forward">
        ▶
      </button>
      <button type="button" onClick={() => seek(n - 1)} aria-label="Last step">
        ▶|
      </button>
      <input
        type="range"
        min={0}
        max={Math.max(0, n - 1)}
        value={step}
        onChange={(e) => seek(Number(e.target.value))}
        aria-label="Serving step"
      />
      <span data-testid="serving-step">
        Step {n ? step + 1 : 0} of {n}
      </span>
    </fieldset>
  );
}

function SequencePicker({ run }: { run: ServingRun }) {
  const seq = useServing((s) => s.seq);
  const pick = useServing((s) => s.pickSequence);
  const B = run.layout === 'varlen' ? run.cuSeqlensQ!.length - 1 : run.cacheSeqlens!.length;
  const label = (b: number) =>
    run.layout === 'varlen'
      ? `${run.cuSeqlensQ![b + 1] - run.cuSeqlensQ![b]} × ${run.cuSeqlensK![b + 1] - run.cuSeqlensK![b]}`
      : `${run.nq} × ${run.cacheSeqlens![b]}`;
  return (
    <fieldset className="seq-picker bare" aria-label="Sequences">
      <span className="dim">Sequence:</span>
      {Array.from({ length: B }, (_, b) => (
        <button
          key={b}
          type="button"
          aria-pressed={b === seq}
          onClick={() => pick(b)}
          style={{ borderColor: seqColour(b) }}
          title={`jump to the first step of sequence ${b}`}
        >
          {b} <span className="dim">({label(b)})</span>
        </button>
      ))}
    </fieldset>
  );
}

function fmt(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)} k` : String(n);
}

function Counters({ run }: { run: ServingRun }) {
  const c = run.counters;
  const tensors = Object.keys(c.hbmRead) as HbmTensor[];
  return (
    <section className="serving-counters" aria-label="Serving counters" data-testid="serving-counters">
      <h3>Counters (whole run)</h3>
      <table>
        <thead>
          <tr>
            <th scope="col">tensor</th>
            <th scope="col">bytes read</th>
          </tr>
        </thead>
        <tbody>
          {tensors.map((t) => (
            <tr key={t}>
              <td>{t}</td>
              <td>{fmt(c.hbmRead[t] ?? 0)}</td>
            </tr>
          ))}
          <tr>
            <td>written</td>
            <td>{fmt(totalBytes(c.hbmWritten))}</td>
          </tr>
        </tbody>
      </table>
      <p>
        Matmul FLOPs: <b data-testid="packed-flops">{fmt(c.matmulFlops)}</b>
        {run.padded && (
          <>
            {' '}
            — the same batch padded to {run.padded.nq} × {run.padded.nk}:{' '}
            <b data-testid="padded-flops">{fmt(run.padded.counters.matmulFlops)}</b> FLOPs, {fmt(totalBytes(run.padded.counters.hbmRead))}{' '}
            bytes read (packing saves {Math.round(100 * (1 - c.matmulFlops / Math.max(1, run.padded.counters.matmulFlops)))}% of the FLOPs)
          </>
        )}
      </p>
      {run.pagesTouched !== undefined && (
        <p>
          Pages touched: <b data-testid="pages-touched">{run.pagesTouched}</b> of {run.numPages}; block-table reads{' '}
          {fmt(c.hbmRead.block_table ?? 0)} bytes against {fmt((c.hbmRead.K ?? 0) + (c.hbmRead.V ?? 0))} of K/V.
        </p>
      )}
      <p>
        Max |O − O_ref| against the per-sequence float64 reference: <b data-testid="serving-error">{run.maxError.toExponential(2)}</b>
      </p>
    </section>
  );
}

export function ServingPage() {
  const run = useServing((s) => s.run);
  const status = useServing((s) => s.status);
  const error = useServing((s) => s.error);
  const step = useServing((s) => s.step);
  const seq = useServing((s) => s.seq);
  const source = useServing((s) => s.source);
  useEffect(() => {
    const st = useServing.getState();
    if (!st.run && st.status === 'idle') void st.load();
  }, []);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTyping(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
      const s = useServing.getState();
      if (!s.run) return;
      const moves: Record<string, number> = { ArrowRight: s.step + 1, ArrowLeft: s.step - 1, Home: 0, End: s.run.steps.length - 1 };
      if (e.key in moves) {
        e.preventDefault();
        s.seek(moves[e.key]);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  const cur = run?.steps[step];
  return (
    <div className="serving-page" data-testid="serving-page">
      <aside className="serving-side">
        <h2>Serving layouts</h2>
        <ProblemForm />
      </aside>
      <div className="serving-main">
        {error && (
          <p role="alert" className="error" data-testid="serving-error-msg">
            {error}
          </p>
        )}
        {status === 'running' && <p className="dim">Running…</p>}
        {run && (
          <>
            <p className="dim" data-testid="serving-summary">
              {run.algorithmName} on a {run.layout === 'varlen' ? 'packed varlen batch' : 'paged K/V cache'} of{' '}
              {run.layout === 'varlen' ? run.cuSeqlensQ!.length - 1 : run.cacheSeqlens!.length} sequences, Hq={run.hq} Hk={run.hk} d={run.d}
              {run.causal ? ', causal' : ''}; tiles {run.blocks.blockM} × {run.blocks.blockN}; inputs{' '}
              {source === 'files' ? 'from files' : 'generated'}.
            </p>
            <Transport run={run} />
            <SequencePicker run={run} />
            {cur && (
              <p className="step-desc" data-testid="step-desc">
                {describe(cur)}
              </p>
            )}
            {run.layout === 'varlen' ? (
              <VarlenView run={run} stepIndex={step} seq={seq} />
            ) : (
              <PagedView run={run} stepIndex={step} seq={seq} />
            )}
            {run.layout === 'paged' && <SmemPagesView run={run} stepIndex={step} />}
            <Counters run={run} />
            <ServingKernels run={run} />
          </>
        )}
      </div>
    </div>
  );
}
