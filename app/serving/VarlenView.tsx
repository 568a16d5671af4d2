// The packed batch as the kernel sees it: Q [total_q, d] down the left, Kᵀ [d, total_k]
// along the top, and the total_q × total_k score grid between them. Only the blocks on the
// diagonal (sequence b's rows against its own keys) are ever computed; everything else is
// cross-sequence and hatched. Sequence boundaries (the cu_seqlens offsets) are drawn on all
// three. The current tile is outlined; where its Br × Bc footprint runs past its sequence's
// last row or key into the next sequence, that part is drawn masked: the kernel predicates
// those rows and columns off, it never mixes two sequences.

import { useEffect, useMemo, useRef } from 'react';
import type { ServingRun, ServingStep } from '../../engine/api.ts';
import { seqColour, valueColour } from './serving-colours.ts';

const MAX_W = 520;
const MAX_H = 380;

interface Props {
  run: ServingRun;
  stepIndex: number;
  seq: number;
}

/** The Br × Bc footprint of a step's tile in packed coordinates, and the parts of it past its sequence. */
export function tileFootprint(run: ServingRun, s: ServingStep) {
  const cq = run.cuSeqlensQ!;
  const ck = run.cuSeqlensK!;
  const { blockM, blockN } = run.blocks;
  const rows: [number, number] | undefined = s.qBlock >= 0 ? [cq[s.b] + s.qBlock * blockM, cq[s.b] + (s.qBlock + 1) * blockM] : undefined;
  const cols: [number, number] | undefined =
    s.kvBlock >= 0 ? [ck[s.b] + s.kvBlock * blockN, ck[s.b] + (s.kvBlock + 1) * blockN] : undefined;
  const rowOver = rows ? Math.max(0, rows[1] - cq[s.b + 1]) : 0;
  const colOver = cols ? Math.max(0, cols[1] - ck[s.b + 1]) : 0;
  return { rows, cols, rowOver, colOver, seqEndQ: cq[s.b + 1], seqEndK: ck[s.b + 1] };
}

function Strip({
  values,
  rows,
  cols,
  cell,
  transpose,
  bounds,
  highlight,
  label,
}: {
  values: Float32Array;
  rows: number;
  cols: number;
  cell: [number, number];
  transpose: boolean;
  bounds: number[];
  highlight?: [number, number];
  label: string;
}) {
  const ref = useRef<HTMLCanvasElement>(null);
  const w = Math.max(1, Math.round((transpose ? rows : cols) * cell[0]));
  const h = Math.max(1, Math.round((transpose ? cols : rows) * cell[1]));
  useEffect(() => {
    const c = ref.current;
    const g = c?.getContext('2d');
    if (!c || !g) return;
    g.clearRect(0, 0, w, h);
    for (let r = 0; r < rows; r++)
      for (let k = 0; k < cols; k++) {
        g.fillStyle = valueColour(values[r * cols + k]);
        if (transpose) g.fillRect(r * cell[0], k * cell[1], Math.ceil(cell[0]), Math.ceil(cell[1]));
        else g.fillRect(k * cell[0], r * cell[1], Math.ceil(cell[0]), Math.ceil(cell[1]));
      }
    g.strokeStyle = '#000';
    g.lineWidth = 2;
    for (const b of bounds) {
      g.beginPath();
      if (transpose) {
        g.moveTo(b * cell[0], 0);
        g.lineTo(b * cell[0], h);
      } else {
        g.moveTo(0, b * cell[1]);
        g.lineTo(w, b * cell[1]);
      }
      g.stroke();
    }
    if (highlight) {
      g.strokeStyle = '#ffd400';
      g.lineWidth = 2;
      if (transpose) g.strokeRect(highlight[0] * cell[0] + 1, 1, (highlight[1] - highlight[0]) * cell[0] - 2, h - 2);
      else g.strokeRect(1, highlight[0] * cell[1] + 1, w - 2, (highlight[1] - highlight[0]) * cell[1] - 2);
    }
  }, [values, rows, cols, cell, transpose, bounds, highlight, w, h]);
  return <canvas ref={ref} width={w} height={h} aria-label={label} role="img" />;
}

export function VarlenView({ run, stepIndex, seq }: Props) {
  const cq = run.cuSeqlensQ!;
  const ck = run.cuSeqlensK!;
  const tq = cq[cq.length - 1];
  const tk = ck[ck.length - 1];
  const cur = run.steps[stepIndex];
  const cell = Math.max(0.5, Math.min(MAX_W / Math.max(1, tk), MAX_H / Math.max(1, tq), 14));
  const W = tk * cell;
  const H = tq * cell;
  const dCell = Math.max(2, Math.min(6, 96 / run.d));
  const head = cur?.h ?? 0;
  const kvHead = Math.floor(head / (run.hq / run.hk));
  const qHead = useMemo(() => {
    const out = new Float32Array(tq * run.d);
    for (let t = 0; t < tq; t++) out.set(run.q.subarray((t * run.hq + head) * run.d, (t * run.hq + head + 1) * run.d), t * run.d);
    return out;
  }, [run, head, tq]);
  const kHead = useMemo(() => {
    const out = new Float32Array(tk * run.d);
    for (let t = 0; t < tk; t++) out.set(run.k.subarray((t * run.hk + kvHead) * run.d, (t * run.hk + kvHead + 1) * run.d), t * run.d);
    return out;
  }, [run, kvHead, tk]);
  // Tiles of this head computed up to the current step.
  const done = useMemo(() => {
    const out: ServingStep[] = [];
    for (let i = 0; i <= stepIndex && i < run.steps.length; i++) {
      const s = run.steps[i];
      if (s.h === head && s.kind === 'qk' && s.packed) out.push(s);
    }
    return out;
  }, [run, stepIndex, head]);
  const fp = cur && cur.line !== 'layout.emptyKeys' ? tileFootprint(run, cur) : undefined;
  const seqRows = cur?.packed?.rows;
  const seqCols = cur?.packed && cur.packed.cols[1] > cur.packed.cols[0] ? cur.packed.cols : undefined;
  const B = cq.length - 1;
  return (
    <section className="serving-view" aria-label="Packed Q, K and scores" data-testid="varlen-view">
      <h3>
        Packed batch — head {head} (K/V head {kvHead})
      </h3>
      <div className="varlen-grid" style={{ gridTemplateColumns: `${run.d * dCell + 8}px ${W}px` }}>
        <div className="corner dim">Q ↓ · Kᵀ →</div>
        <Strip
          values={kHead}
          rows={tk}
          cols={run.d}
          cell={[cell, dCell]}
          transpose
          bounds={ck.slice(1, -1)}
          highlight={seqCols}
          label={`K transposed, ${tk} packed keys, sequence boundaries at ${ck.join(', ')}`}
        />
        <Strip
          values={qHead}
          rows={tq}
          cols={run.d}
          cell={[dCell, cell]}
          transpose={false}
          bounds={cq.slice(1, -1)}
          highlight={seqRows}
          label={`Q, ${tq} packed rows, sequence boundaries at ${cq.join(', ')}`}
        />
        <svg
          width={W}
          height={H}
          viewBox={`0 0 ${W} ${H}`}
          role="img"
          aria-label="score grid of the packed batch"
          data-testid="varlen-grid"
        >
          <defs>
            <pattern id="cross-seq" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
              <rect width="6" height="6" fill="var(--panel2)" />
              <line x1="0" y1="0" x2="0" y2="6" stroke="var(--border)" strokeWidth="2" />
            </pattern>
            <pattern id="straddle" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)">
              <rect width="5" height="5" fill="rgba(213,94,0,0.25)" />
              <line x1="0" y1="0" x2="0" y2="5" stroke="#D55E00" strokeWidth="2" />
            </pattern>
          </defs>
          <rect width={W} height={H} fill="url(#cross-seq)" />
          {Array.from({ length: B }, (_, b) => (
            <rect
              key={`s${b}`}
              data-testid={`seq-block-${b}`}
              x={ck[b] * cell}
              y={cq[b] * cell}
              width={(ck[b + 1] - ck[b]) * cell}
              height={(cq[b + 1] - cq[b]) * cell}
              fill={seqColour(b)}
              fillOpacity={b === seq ? 0.35 : 0.15}
              stroke={seqColour(b)}
              strokeWidth={b === seq ? 2 : 1}
            >
              <title>
                sequence {b}: rows {cq[b]}…{cq[b + 1] - 1}, keys {ck[b]}…{ck[b + 1] - 1}
              </title>
            </rect>
          ))}
          {done.map((s) => (
            <rect
              key={s.step}
              x={s.packed!.cols[0] * cell}
              y={s.packed!.rows[0] * cell}
              width={(s.packed!.cols[1] - s.packed!.cols[0]) * cell}
              height={(s.packed!.rows[1] - s.packed!.rows[0]) * cell}
              fill={seqColour(s.b)}
              fillOpacity={0.55}
            />
          ))}
          {cq.slice(1, -1).map((c, i) => (
            <line key={`r${i}`} x1={0} x2={W} y1={c * cell} y2={c * cell} stroke="var(--text)" strokeDasharray="4 3" strokeWidth={1} />
          ))}
          {ck.slice(1, -1).map((c, i) => (
            <line key={`c${i}`} y1={0} y2={H} x1={c * cell} x2={c * cell} stroke="var(--text)" strokeDasharray="4 3" strokeWidth={1} />
          ))}
          {fp?.rows && (
            <g data-testid="current-tile">
              {(() => {
                const r0 = fp.rows[0];
                const r1 = Math.min(tq, fp.rows[1]);
                const c0 = fp.cols ? fp.cols[0] : ck[cur.b];
                const c1 = fp.cols ? Math.min(tk, fp.cols[1]) : ck[cur.b + 1];
                return (
                  <>
                    {fp.rowOver > 0 && fp.seqEndQ < r1 && (
                      <rect
                        data-testid="straddle-rows"
                        x={c0 * cell}
                        y={fp.seqEndQ * cell}
                        width={(c1 - c0) * cell}
                        height={(r1 - fp.seqEndQ) * cell}
                        fill="url(#straddle)"
                      />
                    )}
                    {fp.colOver > 0 && fp.seqEndK < c1 && (
                      <rect
                        data-testid="straddle-cols"
                        x={fp.seqEndK * cell}
                        y={r0 * cell}
                        width={(c1 - fp.seqEndK) * cell}
                        height={(Math.min(r1, fp.seqEndQ) - r0) * cell}
                        fill="url(#straddle)"
                      />
                    )}
                    <rect
                      x={c0 * cell}
                      y={r0 * cell}
                      width={Math.max(1, (c1 - c0) * cell)}
                      height={Math.max(1, (r1 - r0) * cell)}
                      fill="none"
                      stroke="var(--hl)"
                      strokeWidth={2}
                      strokeDasharray={fp.cols ? undefined : '5 3'}
                    />
                  </>
                );
              })()}
            </g>
          )}
        </svg>
      </div>
      {fp && cur && <TileCaption run={run} s={cur} fp={fp} />}
      <p className="serving-legend dim">
        Coloured: a sequence's own rows × keys (bright: computed so far in this head). Grey hatching: cross-sequence pairs, never computed.
        Orange hatching: the part of the current Br × Bc tile that lies past its sequence's end — predicated off (masked), never read as
        another sequence's data.
      </p>
    </section>
  );
}

function TileCaption({ run, s, fp }: { run: ServingRun; s: ServingStep; fp: ReturnType<typeof tileFootprint> }) {
  const { blockM, blockN } = run.blocks;
  const parts: string[] = [];
  if (fp.rows)
    parts.push(
      `Q tile ${s.qBlock}: rows ${s.rows[0]}…${s.rows[1] - 1} of sequence ${s.b} = packed rows ${s.packed?.rows[0]}…${(s.packed?.rows[1] ?? 1) - 1}`,
    );
  if (fp.cols)
    parts.push(
      `K/V tile ${s.kvBlock}: keys ${s.cols[0]}…${s.cols[1] - 1} = packed keys ${s.packed?.cols[0]}…${(s.packed?.cols[1] ?? 1) - 1}`,
    );
  const straddle: string[] = [];
  if (fp.rowOver > 0) straddle.push(`${fp.rowOver} of its ${blockM} rows`);
  if (fp.colOver > 0) straddle.push(`${fp.colOver} of its ${blockN} columns`);
  return (
    <p className="tile-caption" data-testid="tile-caption">
      {parts.join('; ')}.{' '}
      {straddle.length > 0 ? (
        <strong data-testid="straddle-note">
          The tile straddles the sequence end: {straddle.join(' and ')} fall past it (into the next sequence or past the tensor) and are
          masked.
        </strong>
      ) : (
        'The tile lies inside its sequence.'
      )}
    </p>
  );
}
