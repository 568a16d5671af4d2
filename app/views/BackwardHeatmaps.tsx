// The backward pass's heatmaps: the inputs (Q, Kᵀ, V, dO), the recomputed S and P next to
// the P a standard forward stores, dP, D and dS, and the gradients dQ, dK, dV filling in.
// The current step's tile is outlined in yellow; dQ marks the rows being added to and names
// the K/V column block the add comes from. Colour scales are fixed over the whole run.

import '../backward/backward.css';
import { useMemo } from 'react';
import { type Frame, type HeadInputs, type LoadSummary, findDescriptor } from '../../engine/api.ts';
import { useApp, type MatrixId } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import { colourScale } from './colour.ts';
import { Heatmap, type Rect } from './Heatmap.tsx';
import { usePhoneWidth } from './phone-width.ts';

const rowsRect = (r0: number, r1: number, width: number): Rect | undefined => (r1 > r0 ? { r0, r1, c0: 0, c1: width } : undefined);

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
  const g = frame.bwd;
  if (!scales || !g) return <p className="dim">This run carries no backward state.</p>;
  const { blockM, blockN } = summary.blocks;
  const ev = frame.event;
  const [r0, r1] = ev.tile.rows;
  const [c0, c1] = ev.tile.cols;
  const { nq, nk, dv } = frame;
  const d = inputs.d;
  const tile: Rect | undefined = r1 > r0 && c1 > c0 ? { r0, r1, c0, c1 } : undefined;
  const kCols: Rect | undefined = c1 > c0 ? { r0: 0, r1: d, c0, c1 } : undefined;
  const dqAdd = ev.kind === 'dq';
  const zoom = (matrix: MatrixId) => (tr: number, tc: number) => {
    const qBlock = matrix === 'K' || matrix === 'V' ? -1 : tr;
    const kvBlock = matrix === 'K' ? tc : matrix === 'V' ? tr : matrix === 'S' || matrix === 'P' ? tc : -1;
    patchSelection(pane, { zoom: { matrix, qBlock, kvBlock } });
  };
  // Five across on a wide screen; one or two across on a phone, as large as the forward heatmaps.
  const big = phone ? 250 : 160;
  const tall = (n: number, other: number) => Math.max(40, Math.min(big, (big * n) / Math.max(other, 1)));
  const desc = findDescriptor(summary.algorithm);
  const standard = desc?.rowStats === 'materialized';
  const fa1 = desc?.rowStats === 'hbm';
  // FA3 keeps dQaccum and dK without the softmax scale until its postprocess and epilogue.
  const scaleLater = desc?.backward?.scaleLater === true;
  const grouped = problem !== undefined && problem.hq > problem.hk;
  return (
    <section className="view heatmaps bwd-heatmaps" aria-label="Backward heatmaps">
      <fieldset className="bwd-row bare" aria-label="Inputs">
        <Heatmap
          id="Q"
          title="Q"
          data={inputs.q}
          rows={nq}
          cols={d}
          scale={scales.q}
          tileRows={blockM}
          tileCols={d}
          highlight={rowsRect(r0, r1, d)}
          maxPx={tall(nq, nk)}
          onTileClick={zoom('Q')}
        />
        <Heatmap
          id="Kᵀ"
          title="Kᵀ"
          data={inputs.k}
          rows={d}
          cols={nk}
          transposed
          scale={scales.k}
          tileRows={d}
          tileCols={blockN}
          highlight={kCols}
          maxPx={big}
          onTileClick={zoom('K')}
        />
        <Heatmap
          id="V"
          title="V"
          data={inputs.v}
          rows={nk}
          cols={dv}
          scale={scales.v}
          tileRows={blockN}
          tileCols={dv}
          highlight={rowsRect(c0, c1, dv)}
          maxPx={tall(nk, nq)}
          onTileClick={zoom('V')}
        />
        {inputs.dO && (
          <Heatmap
            id="dO"
            title="dO (incoming gradient)"
            data={inputs.dO}
            rows={nq}
            cols={dv}
            scale={scales.dO}
            tileRows={blockM}
            tileCols={dv}
            highlight={rowsRect(r0, r1, dv)}
            maxPx={tall(nq, nk)}
          />
        )}
      </fieldset>
      {standard ? (
        <fieldset className="bwd-row bare" aria-label="Stored probabilities">
          {inputs.pForward && (
            <Heatmap
              id="P"
              title="P (stored by the forward, read from HBM)"
              data={inputs.pForward}
              rows={nq}
              cols={nk}
              scale={scales.p}
              tileRows={blockM}
              tileCols={blockN}
              highlight={tile}
              maxPx={big}
              onTileClick={zoom('P')}
            />
          )}
        </fieldset>
      ) : (
        <fieldset className="bwd-row bare" aria-label="Recomputed probabilities">
          <Heatmap
            id="S"
            title="S = τ·QKᵀ (recomputed)"
            data={frame.s}
            version={frame.seq}
            mask={frame.mask}
            rows={nq}
            cols={nk}
            scale={scales.s}
            tileRows={blockM}
            tileCols={blockN}
            highlight={tile}
            maxPx={big}
            onTileClick={zoom('S')}
          />
          <Heatmap
            id="P"
            title={fa1 ? 'P = exp(S − m) / l (recomputed)' : 'P = exp(S − L) (recomputed)'}
            data={frame.p}
            version={frame.seq}
            rows={nq}
            cols={nk}
            scale={scales.p}
            tileRows={blockM}
            tileCols={blockN}
            highlight={tile}
            maxPx={big}
            onTileClick={zoom('P')}
          />
          {inputs.pForward && (
            <Heatmap
              id="P fwd"
              title="P a standard forward stores"
              data={inputs.pForward}
              rows={nq}
              cols={nk}
              scale={scales.p}
              tileRows={blockM}
              tileCols={blockN}
              highlight={tile}
              maxPx={big}
            />
          )}
        </fieldset>
      )}
      <fieldset className="bwd-row bare" aria-label="Softmax gradient">
        <Heatmap
          id="dP"
          title="dP = dO·Vᵀ"
          data={g.dP}
          version={frame.seq}
          rows={nq}
          cols={nk}
          scale={scales.dP}
          tileRows={blockM}
          tileCols={blockN}
          highlight={tile}
          maxPx={big}
        />
        <Heatmap
          id="D"
          title="D = rowsum(dO∘O)"
          data={g.D}
          version={frame.seq}
          rows={nq}
          cols={1}
          scale={scales.D}
          tileRows={blockM}
          tileCols={1}
          highlight={rowsRect(r0, r1, 1)}
          maxPx={tall(nq, nk)}
        />
        <Heatmap
          id="dS"
          title="dS = P∘(dP − D)"
          data={g.dS}
          version={frame.seq}
          rows={nq}
          cols={nk}
          scale={scales.dS}
          tileRows={blockM}
          tileCols={blockN}
          highlight={tile}
          maxPx={big}
        />
      </fieldset>
      <fieldset className="bwd-row bare" aria-label="Gradients">
        <Heatmap
          id="dQ"
          title={`${scaleLater ? 'dQaccum (unscaled) → dQ' : 'dQ'}${dqAdd ? ` (accumulating: + K/V block ${ev.tile.kvBlock})` : ''}`}
          data={g.dQ}
          version={frame.seq}
          rows={nq}
          cols={d}
          scale={scales.dQ}
          tileRows={blockM}
          tileCols={d}
          highlight={rowsRect(r0, r1, d)}
          markRows={dqAdd ? [r0, r1] : undefined}
          maxPx={tall(nq, nk)}
        />
        <Heatmap
          id="dK"
          title={scaleLater ? 'dK (unscaled until written)' : 'dK'}
          data={g.dK}
          version={frame.seq}
          rows={nk}
          cols={d}
          scale={scales.dK}
          tileRows={blockN}
          tileCols={d}
          highlight={rowsRect(c0, c1, d)}
          maxPx={tall(nk, nq)}
        />
        <Heatmap
          id="dV"
          title="dV"
          data={g.dV}
          version={frame.seq}
          rows={nk}
          cols={dv}
          scale={scales.dV}
          tileRows={blockN}
          tileCols={dv}
          highlight={rowsRect(c0, c1, dv)}
          maxPx={tall(nk, nq)}
        />
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
