// The numbers of one tile, after a click on a heatmap.

import { useEffect, useRef } from 'react';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import { usePrecisionMarks } from './precision-store.ts';

const MAX_CELLS = 64 * 64;

function cell(v: number, masked: boolean): string {
  if (masked) return 'mask';
  if (Number.isNaN(v)) return '·';
  if (v === -Infinity) return '−∞';
  if (v === Infinity) return '+∞';
  return Number(v.toPrecision(4)).toString();
}

export function TileZoomView() {
  const { pane } = usePane();
  const zoom = useApp((s) => s.selection[pane].zoom);
  const frame = useApp((s) => s.playback[pane].frame);
  const inputs = useApp((s) => s.playback[pane].inputs);
  const summary = useApp((s) => s.playback[pane].summary);
  const patchSelection = useApp((s) => s.patchSelection);
  const marks = usePrecisionMarks();
  const box = useRef<HTMLElement>(null);
  // The numbers can open below the fold (a short window, a phone): bring them into view once per tile opened.
  const opened = zoom ? `${zoom.matrix}|${zoom.qBlock}|${zoom.kvBlock}` : '';
  useEffect(() => {
    if (opened) box.current?.scrollIntoView({ block: 'nearest' });
  }, [opened]);
  if (!zoom || !frame || !inputs || !summary) return null;
  // P values the FP8 cast flushed to zero, by the current step (a low-precision run's P tile only).
  const flushed = (r: number, c: number) =>
    zoom.matrix === 'P' && !!marks && marks.flushedAt[r * frame.nk + c] >= 0 && marks.flushedAt[r * frame.nk + c] <= frame.step;
  const { blockM, blockN } = summary.blocks;
  let title = '';
  let rowLo = 0;
  let rowHi = 0;
  let colLo = 0;
  let colHi = 0;
  let get: (r: number, c: number) => number;
  let masked = (_r: number, _c: number) => false;
  const qr = [zoom.qBlock * blockM, Math.min(frame.nq, (zoom.qBlock + 1) * blockM)];
  const kr = [zoom.kvBlock * blockN, Math.min(frame.nk, (zoom.kvBlock + 1) * blockN)];
  switch (zoom.matrix) {
    case 'S':
    case 'P': {
      const m = zoom.matrix === 'S' ? frame.s : frame.p;
      [rowLo, rowHi, colLo, colHi] = [qr[0], qr[1], kr[0], kr[1]];
      get = (r, c) => m[r * frame.nk + c];
      if (zoom.matrix === 'S') masked = (r, c) => frame.mask[r * frame.nk + c] === 1;
      title = `${zoom.matrix} tile (${zoom.qBlock}, ${zoom.kvBlock})`;
      break;
    }
    case 'Q':
      [rowLo, rowHi, colLo, colHi] = [qr[0], qr[1], 0, inputs.d];
      get = (r, c) => inputs.q[r * inputs.d + c];
      title = `Q block ${zoom.qBlock}`;
      break;
    case 'O':
      [rowLo, rowHi, colLo, colHi] = [qr[0], qr[1], 0, frame.dv];
      get = (r, c) => frame.o[r * frame.dv + c];
      title = `O block ${zoom.qBlock}`;
      break;
    case 'K':
      [rowLo, rowHi, colLo, colHi] = [0, inputs.d, kr[0], kr[1]];
      get = (r, c) => inputs.k[c * inputs.d + r];
      title = `Kᵀ block ${zoom.kvBlock}`;
      break;
    case 'V':
      [rowLo, rowHi, colLo, colHi] = [kr[0], kr[1], 0, inputs.dv];
      get = (r, c) => inputs.v[r * inputs.dv + c];
      title = `V block ${zoom.kvBlock}`;
      break;
  }
  const cols = Math.min(colHi - colLo, Math.floor(MAX_CELLS / Math.max(1, rowHi - rowLo)));
  return (
    <section ref={box} className="view tile-zoom" aria-label="Tile numbers">
      <header>
        <h3>{title}</h3>
        <button type="button" onClick={() => patchSelection(pane, { zoom: null })}>
          Close tile
        </button>
      </header>
      <div className="zoom-scroll">
        <table className="num-table">
          <thead>
            <tr>
              <th>
                <span className="sr-only">row \ column</span>
              </th>
              {Array.from({ length: cols }, (_, c) => (
                <th key={c}>{colLo + c}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {Array.from({ length: rowHi - rowLo }, (_, i) => rowLo + i).map((r) => (
              <tr key={r}>
                <th>{r}</th>
                {Array.from({ length: cols }, (_, c) =>
                  flushed(r, colLo + c) ? (
                    <td
                      key={c}
                      className="flushed"
                      title="flushed to 0 by the P cast: P·pScale fell below half of the format's smallest value"
                    >
                      0✕
                    </td>
                  ) : (
                    <td key={c}>{cell(get(r, colLo + c), masked(r, colLo + c))}</td>
                  ),
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {zoom.matrix === 'P' && marks && marks.flushed > 0 && (
        <p className="dim note">0✕: a P value the cast to e4m3 flushed to zero (it was &gt; 0 in fp32).</p>
      )}
    </section>
  );
}
