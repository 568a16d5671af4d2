// The backward pass's heatmaps: the inputs (Q, Kᵀ, V, dO), the recomputed S and P next to
// the P a standard forward stores, dP, D and dS, and the gradients dQ, dK, dV filling in.
// The current step's tile is outlined in yellow; dQ marks the rows being added to and names
// the K/V column block the add comes from. Colour scales are fixed over the whole run.

import '../backward/backward.css';
import { useMemo, useState } from 'react';
import { type Frame, type HeadInputs, type LoadSummary, findDescriptor } from '../../engine/api.ts';
import { useApp, type MatrixId } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import { colourScale } from './colour.ts';
import { TileHeatmap } from './TileHeatmap.tsx';
import type { Axis, TileGeometry } from './tile-geometry.ts';
import { usePhoneWidth } from './phone-width.ts';

export function BackwardHeatmaps({ frame, inputs, summary }: { frame: Frame; inputs: HeadInputs; summary: LoadSummary }) {
  const { pane } = usePane();
  const patchSelection = useApp((s) => s.patchSelection);
  const problem = useApp((s) => s.problem[pane].applied?.problem);
  const ranges = summary.ranges;
  const br = summary.backward?.ranges;
  const scales = useMemo(
    () =>
      br && {
        q: colourScale('diverging', ranges.q),
        k: colourScale('diverging', ranges.k),
        v: colourScale('diverging', ranges.v),
        s: colourScale('diverging', ranges.s),
        p: colourScale('sequential', ranges.p),
        dO: colourScale('diverging', br.dO),
        D: colourScale('diverging', br.D),
        dP: colourScale('diverging', br.dP),
        dS: colourScale('diverging', br.dS),
        dQ: colourScale('diverging', br.dQ),
        dK: colourScale('diverging', br.dK),
        dV: colourScale('diverging', br.dV),
      },
    [ranges, br],
  );
  const phone = usePhoneWidth();
  // The inputs never change during a run: a phone starts with them folded, which saves a column of four maps per pane.
  const [inputsOpen, setInputsOpen] = useState<boolean | undefined>(undefined);
  const g = frame.bwd;
  if (!scales || !g) return <p className="dim">This run carries no backward state.</p>;
  const ev = frame.event;
  const [r0, r1] = ev.tile.rows;
  const { nq, nk, dv } = frame;
  const geometry: TileGeometry = { nq, nk, d: inputs.d, dv, ...summary.blocks, rows: ev.tile.rows, cols: ev.tile.cols };
  const dqAdd = ev.kind === 'dq';
  const zoom = (matrix: MatrixId) => (tr: number, tc: number) => {
    const qBlock = matrix === 'K' || matrix === 'V' ? -1 : tr;
    const kvBlock = matrix === 'K' ? tc : matrix === 'V' ? tr : matrix === 'S' || matrix === 'P' ? tc : -1;
    patchSelection(pane, { zoom: { matrix, qBlock, kvBlock } });
  };
  // Five across on a wide screen; one or two across on a phone, as large as the forward heatmaps.
  const big = phone ? 250 : 160;
  const tall = (n: number, other: number) => Math.max(40, Math.min(big, (big * n) / Math.max(other, 1)));
  // Maps across the keys (or Kᵀ's head dims) take the full size; the others are as tall as their rows.
  const px = (rows: Axis, cols: Axis) => (cols === 'k' || rows === 'd' ? big : rows === 'q' ? tall(nq, nk) : tall(nk, nq));
  const map = (rows: Axis, cols: Axis) => ({ geometry, rows, cols, maxPx: px(rows, cols) });
  const desc = findDescriptor(summary.algorithm);
  const standard = desc?.rowStats === 'materialized';
  const fa1 = desc?.rowStats === 'hbm';
  // FA3 keeps dQaccum and dK without the softmax scale until its postprocess and epilogue.
  const scaleLater = desc?.backward?.scaleLater === true;
  const grouped = problem !== undefined && problem.hq > problem.hk;
  return (
    <section className="view heatmaps bwd-heatmaps" aria-label="Backward heatmaps">
      <details className="bwd-inputs" open={inputsOpen ?? !phone} onToggle={(e) => setInputsOpen(e.currentTarget.open)}>
        <summary>Inputs: Q, Kᵀ, V{inputs.dO ? ', dO' : ''}</summary>
        <fieldset className="bwd-row bare" aria-label="Inputs">
          <TileHeatmap {...map('q', 'd')} id="Q" title="Q" data={inputs.q} scale={scales.q} onTileClick={zoom('Q')} />
          <TileHeatmap {...map('d', 'k')} id="Kᵀ" title="Kᵀ" data={inputs.k} transposed scale={scales.k} onTileClick={zoom('K')} />
          <TileHeatmap {...map('k', 'dv')} id="V" title="V" data={inputs.v} scale={scales.v} onTileClick={zoom('V')} />
          {inputs.dO && <TileHeatmap {...map('q', 'dv')} id="dO" title="dO (incoming gradient)" data={inputs.dO} scale={scales.dO} />}
        </fieldset>
      </details>
      {standard ? (
        <fieldset className="bwd-row bare" aria-label="Stored probabilities">
          {inputs.pForward && (
            <TileHeatmap
              {...map('q', 'k')}
              id="P"
              title="P (stored by the forward, read from HBM)"
              data={inputs.pForward}
              scale={scales.p}
              onTileClick={zoom('P')}
            />
          )}
        </fieldset>
      ) : (
        <fieldset className="bwd-row bare" aria-label="Recomputed probabilities">
          <TileHeatmap
            {...map('q', 'k')}
            id="S"
            title="S = τ·QKᵀ (recomputed)"
            data={frame.s}
            version={frame.seq}
            mask={frame.mask}
            scale={scales.s}
            onTileClick={zoom('S')}
          />
          <TileHeatmap
            {...map('q', 'k')}
            id="P"
            title={fa1 ? 'P = exp(S − m) / ℓ (recomputed)' : 'P = exp(S − L) (recomputed)'}
            data={frame.p}
            version={frame.seq}
            scale={scales.p}
            onTileClick={zoom('P')}
          />
          {inputs.pForward && (
            <TileHeatmap {...map('q', 'k')} id="P fwd" title="P a standard forward stores" data={inputs.pForward} scale={scales.p} />
          )}
        </fieldset>
      )}
      <fieldset className="bwd-row bare" aria-label="Softmax gradient">
        <TileHeatmap {...map('q', 'k')} id="dP" title="dP = dO·Vᵀ" data={g.dP} version={frame.seq} scale={scales.dP} />
        <TileHeatmap {...map('q', 'one')} id="D" title="D = rowsum(dO∘O)" data={g.D} version={frame.seq} scale={scales.D} />
        <TileHeatmap {...map('q', 'k')} id="dS" title="dS = P∘(dP − D)" data={g.dS} version={frame.seq} scale={scales.dS} />
      </fieldset>
      <fieldset className="bwd-row bare" aria-label="Gradients">
        <TileHeatmap
          {...map('q', 'd')}
          id="dQ"
          title={`${scaleLater ? 'dQaccum (unscaled) → dQ' : 'dQ'}${dqAdd ? ` (accumulating: + K/V block ${ev.tile.kvBlock})` : ''}`}
          data={g.dQ}
          version={frame.seq}
          scale={scales.dQ}
          markRows={dqAdd ? [r0, r1] : undefined}
        />
        <TileHeatmap
          {...map('k', 'd')}
          id="dK"
          title={scaleLater ? 'dK (unscaled until written)' : 'dK'}
          data={g.dK}
          version={frame.seq}
          scale={scales.dK}
        />
        <TileHeatmap {...map('k', 'dv')} id="dV" title="dV" data={g.dV} version={frame.seq} scale={scales.dV} />
      </fieldset>
      <p className="hint" data-testid="bwd-hint">
        Head b={frame.b}, h={frame.h}. Yellow: the tile this step works on.{' '}
        {dqAdd && `dQ rows ${r0}–${r1 - 1} (orange bar) receive τ·dS·K from K/V column block ${ev.tile.kvBlock} (yellow in Kᵀ). `}
        {summary.backward &&
          !standard &&
          `The recomputed P matches the stored one to ${summary.backward.recomputeMaxDiff.toExponential(2)} at most. `}
        dQ, dK and dV are checkered until a step writes them.
        {grouped &&
          ' dK and dV are this query head’s part: the K/V head’s gradient adds the parts of every query head in its group, in HBM.'}
      </p>
    </section>
  );
}
