// The shared memory of the CTA that runs the current step of a paged run: the Q tile and the
// K/V tile buffers of the hardware model (fmha_v2 double-buffers K/V, flash-decoding and FA2
// keep one of each), each K/V buffer labelled with the physical pages and slots its keys
// were copied from (engine/layouts/smem-pages.ts). Widths follow the buffers' bytes.

import { type ServingRun, DESCRIPTORS, findDescriptor, hasHardwareModel, kvStagesOf, smemAt, type SmemBuffer } from '../../engine/api.ts';
import { seqColour } from './serving-colours.ts';

const kib = (n: number) => (n >= 1024 ? `${(n / 1024).toFixed(n % 1024 ? 1 : 0)} KiB` : `${n} B`);

function content(buf: SmemBuffer, b: number, rows: number): string {
  if (!buf.holds) return 'empty (not loaded yet)';
  const [a, z] = buf.holds;
  const what = buf.name === 'sQ' ? (z - a === 1 ? `query row ${a}` : `query rows ${a}…${z - 1}`) : `keys ${a}…${z - 1}`;
  // A tile past the sequence's end is only partly filled: the copy is predicated off there.
  const use = z - a < rows ? ` (${z - a} of ${rows} rows in use)` : '';
  return `sequence ${b}, ${what}${use}`;
}

export function SmemPagesView({ run, stepIndex }: { run: ServingRun; stepIndex: number }) {
  const pageNote = findDescriptor(run.algorithm)?.serving.pageNote;
  if (kvStagesOf(run.algorithm) === undefined) {
    const titles = DESCRIPTORS.filter((d) => d.serving.smemKvStages !== undefined).map((d) => d.title);
    const paged = titles.length > 1 ? `${titles.slice(0, -1).join(', ')} and ${titles[titles.length - 1]}` : titles.join('');
    return (
      <section className="serving-view" aria-label="Shared memory of the current CTA" data-testid="smem-view">
        <h3>Shared memory</h3>
        <p className="dim">
          The page-by-page SMEM view covers the paged kernels of {paged}; {run.algorithmName} keeps its K/V in SMEM of another shape
          {hasHardwareModel(run.algorithm)
            ? ': load it in the Single tab (top bar), whose Memory map view draws it.'
            : ', which FlashScope does not draw.'}
        </p>
      </section>
    );
  }
  const st = smemAt(run, stepIndex);
  if (!st) {
    return (
      <section className="serving-view" aria-label="Shared memory of the current CTA" data-testid="smem-view">
        <h3>Shared memory</h3>
        <p className="dim">
          This step runs outside a CTA of the attention kernel (flash-decoding's combine reads the partial results from HBM).
        </p>
      </section>
    );
  }
  const total = st.buffers.reduce((a, x) => a + x.bytes, 0);
  return (
    <section className="serving-view" aria-label="Shared memory of the current CTA" data-testid="smem-view">
      <h3>
        Shared memory of the CTA for sequence {st.b}, head {st.h}, Q tile {st.qBlock}
        {st.split !== undefined ? `, split ${st.split}` : ''} — {kib(total)}
      </h3>
      <div className="smem-strip">
        {st.buffers.map((buf) => {
          const id = `smem-${buf.name}-${buf.stage}`;
          return (
            <div
              key={id}
              data-testid={id}
              className={['smem-buf', buf.role ?? '', buf.holds ? '' : 'empty'].join(' ')}
              style={{ flexGrow: buf.bytes, borderTopColor: buf.holds ? seqColour(st.b) : undefined }}
              title={`${buf.name}${buf.name === 'sQ' ? '' : ` stage ${buf.stage}`}: ${kib(buf.bytes)}; ${content(buf, st.b, buf.name === 'sQ' ? run.blocks.blockM : run.blocks.blockN)}`}
            >
              <b>
                {buf.name}
                {buf.name === 'sQ' ? '' : `[${buf.stage}]`}
              </b>{' '}
              <span className="dim">{kib(buf.bytes)}</span>
              {buf.role && <span className="smem-role"> · {buf.role}</span>}
              <div>{content(buf, st.b, buf.name === 'sQ' ? run.blocks.blockM : run.blocks.blockN)}</div>
              {buf.spans?.map((sp) => (
                <div key={sp.logical} className="smem-span" data-testid={`${id}-page`}>
                  ← page {sp.page} slots {sp.slots[0]}…{sp.slots[1] - 1}
                </div>
              ))}
            </div>
          );
        })}
      </div>
      <p className="serving-legend dim">
        Yellow: the buffer this step fills from the pages named under it; outlined: a buffer this step reads. The n-th K/V tile of a CTA
        goes to stage n mod {st.buffers.filter((x) => x.name === 'sK').length}
        {pageNote ? ` — ${pageNote}` : ''}.
      </p>
    </section>
  );
}
