// The problem as typed: shape fields, masks and score modifiers, the mask_mod editor and
// block-sparse, and the one-click fix when the chosen path cannot hold the shape.

import { PATH_LABELS, type WebGpuField, type WebGpuPath, type WebGpuChange } from '../../engine/api.ts';
import { MaskEditor } from '../mask/MaskEditor.tsx';
import { SHAPE_FIELDS, type Form } from './webgpu-form.ts';

export interface ShapeFormProps {
  form: Form;
  set(patch: Partial<Form>): void;
  /** A shape field the person typed: a path chosen later keeps it where it takes it. */
  onTyped(field: WebGpuField): void;
  busy: boolean;
  /** flash-decoding with a mask_mod always walks the block list. */
  decodesListed: boolean;
}

export function ShapeForm({ form, set, onTyped, busy, decodesListed }: ShapeFormProps) {
  const field = (k: keyof Form, label: string, title?: string) => (
    <label className="wg-field" title={title}>
      <span>{label}</span>
      <input
        value={form[k] as string}
        onChange={(e) => {
          if ((SHAPE_FIELDS as readonly string[]).includes(k)) onTyped(k as WebGpuField);
          set({ [k]: e.target.value });
        }}
        disabled={busy}
        aria-label={label}
      />
    </label>
  );
  return (
    <>
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
    </>
  );
}

/** The path cannot hold this shape here: why, and a button that sets the fields it names. */
export function PathFit({
  path,
  fix,
  busy,
  set,
}: {
  path: WebGpuPath;
  fix: WebGpuChange[];
  busy: boolean;
  set(patch: Partial<Form>): void;
}) {
  if (fix.length === 0) return null;
  const fixText = fix.map((c) => `${c.field === 'nq' ? 'Nq' : c.field === 'nk' ? 'Nk' : c.field} to ${c.to}`).join(' and ');
  return (
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
  );
}
