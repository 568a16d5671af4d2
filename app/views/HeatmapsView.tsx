// Q, Kᵀ, V, S, P and O of the current head with the current tile highlighted. Colour
// scales come from the whole run's value ranges, so colours do not shift while stepping.

import { useMemo } from 'react';
import { useApp, type MatrixId } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import { colourScale } from './colour.ts';
import { Heatmap, type Rect } from './Heatmap.tsx';
import { BackwardHeatmaps } from './BackwardHeatmaps.tsx';
import { flushedUpTo, usePrecisionMarks } from './precision-store.ts';
import { scaleLines, tileIndex } from './tile-info.ts';
import { scoreTitles } from './score-titles.ts';
import { findDescriptor } from '../../engine/api.ts';

export const FLUSHED_LABEL = 'flushed to 0 by the P cast';

export function HeatmapsView() {
  const { pane } = usePane();
  const frame = useApp((s) => s.playback[pane].frame);
  const inputs = useApp((s) => s.playback[pane].inputs);
  const summary = useApp((s) => s.playback[pane].summary);
  const patchSelection = useApp((s) => s.patchSelection);
  // Low-precision runs: the P values the cast flushed so far, and each tile's scales on hover.
  const marks = usePrecisionMarks();
  const step = frame?.step ?? -1;
  const flushed = useMemo(() => (marks ? flushedUpTo(marks.flushedAt, step) : undefined), [marks, step]);
  const tileInfo = useMemo(() => {
    if (!marks) return undefined;
    const idx = tileIndex(marks.tiles);
    return (tr: number, tc: number) => scaleLines(idx.get(`${tr},${tc}`));
  }, [marks]);
  const ranges = summary?.ranges;
  const rowStats = summary ? findDescriptor(summary.algorithm)?.rowStats : undefined;
  const standard = rowStats === 'materialized';
  // Q, K and V are on their robust extent (an outlier row is clipped, not the rest washed
  // out); standard attention's normalized P, mostly near 1/Nk, on a square-root scale.
  const scales = useMemo(
    () =>
      ranges &&
      inputs && {
        q: colourScale('diverging', ranges.q, { values: inputs.q }),
        k: colourScale('diverging', ranges.k, { values: inputs.k }),
        v: colourScale('diverging', ranges.v, { values: inputs.v }),
        s: colourScale('diverging', ranges.s),
        p: colourScale('sequential', ranges.p, { gamma: standard ? 0.5 : 1 }),
        o: colourScale('diverging', ranges.o),
      },
    [ranges, inputs, standard],
  );
  if (!frame || !inputs || !summary || !scales) return null;
  if (summary.pass === 'backward') return <BackwardHeatmaps frame={frame} inputs={inputs} summary={summary} />;
  const { blockM, blockN } = summary.blocks;
  const [r0, r1] = frame.event.tile.rows;
  const [c0, c1] = frame.event.tile.cols;
  const sTile: Rect | undefined = r1 > r0 && c1 > c0 ? { r0, r1, c0, c1 } : undefined;
  const qRows: Rect | undefined = r1 > r0 ? { r0, r1, c0: 0, c1: inputs.d } : undefined;
  const kCols: Rect | undefined = c1 > c0 ? { r0: 0, r1: inputs.d, c0, c1 } : undefined;
  const vRows: Rect | undefined = c1 > c0 ? { r0: c0, r1: c1, c0: 0, c1: inputs.dv } : undefined;
  const oRows: Rect | undefined = r1 > r0 ? { r0, r1, c0: 0, c1: frame.dv } : undefined;
  const ch = frame.changed;
  const sChanged: Rect | undefined = ch && { r0: ch.rows[0], r1: ch.rows[1], c0: ch.cols[0], c1: ch.cols[1] };
  const oChanged: Rect | undefined = ch && { r0: ch.oRows[0], r1: ch.oRows[1], c0: 0, c1: frame.dv };
  const zoom = (matrix: MatrixId) => (tr: number, tc: number) => {
    const qBlock = matrix === 'K' || matrix === 'V' ? -1 : tr;
    const kvBlock = matrix === 'K' ? tc : matrix === 'V' ? tr : matrix === 'S' || matrix === 'P' ? tc : -1;
    patchSelection(pane, { zoom: { matrix, qBlock, kvBlock } });
  };
  const fa1 = rowStats === 'hbm';
  const titles = scoreTitles(summary.algorithm, !!summary.base2);
  const big = 250;
  const side = (n: number, other: number) => Math.max(24, (big * n) / Math.max(other, 1));
  return (
    <section className="view heatmaps" aria-label="Tile heatmaps">
      <div className="hm-layout">
        <Heatmap
          id="Q"
          title="Q"
          data={inputs.q}
          rows={inputs.nq}
          cols={inputs.d}
          scale={scales.q}
          tileRows={blockM}
          tileCols={inputs.d}
          highlight={qRows}
          maxPx={Math.max(side(inputs.nq, inputs.nk), 40)}
          onTileClick={zoom('Q')}
        />
        <Heatmap
          id="Kᵀ"
          title="Kᵀ"
          data={inputs.k}
          rows={inputs.d}
          cols={inputs.nk}
          transposed
          scale={scales.k}
          tileRows={inputs.d}
          tileCols={blockN}
          highlight={kCols}
          maxPx={big}
          onTileClick={zoom('K')}
        />
        <Heatmap
          id="V"
          title="V"
          data={inputs.v}
          rows={inputs.nk}
          cols={inputs.dv}
          scale={scales.v}
          tileRows={blockN}
          tileCols={inputs.dv}
          highlight={vRows}
          maxPx={big}
          onTileClick={zoom('V')}
        />
        <Heatmap
          id="S"
          title={titles.s}
          data={frame.s}
          version={frame.seq}
          changed={sChanged}
          mask={frame.mask}
          rows={frame.nq}
          cols={frame.nk}
          scale={scales.s}
          tileRows={blockM}
          tileCols={blockN}
          highlight={sTile}
          maxPx={big}
          onTileClick={zoom('S')}
          tileInfo={tileInfo}
        />
        <Heatmap
          id="P"
          title={titles.p}
          data={frame.p}
          version={frame.seq}
          changed={sChanged}
          rows={frame.nq}
          cols={frame.nk}
          scale={scales.p}
          tileRows={blockM}
          tileCols={blockN}
          highlight={sTile}
          maxPx={big}
          onTileClick={zoom('P')}
          marks={flushed}
          marksLabel={FLUSHED_LABEL}
          tileInfo={tileInfo}
        />
        <Heatmap
          id="O"
          title={fa1 ? 'O (HBM-resident, rewritten)' : 'O'}
          data={frame.o}
          version={frame.seq}
          changed={oChanged}
          rows={frame.nq}
          cols={frame.dv}
          scale={scales.o}
          tileRows={blockM}
          tileCols={frame.dv}
          highlight={oRows}
          markRows={fa1 && frame.event.kind === 'write' ? [r0, r1] : undefined}
          maxPx={Math.max(side(frame.nq, frame.nk), 40)}
          onTileClick={zoom('O')}
        />
      </div>
      <p className="hint">
        Click a tile to see its numbers. Yellow: the tile the current step works on. Head b={frame.b}, h={frame.h}.
        {rowStats === 'on-chip' &&
          ' O is coloured on the final output’s range: rows still accumulating (not yet divided by l) can exceed it and show saturated.'}
        {titles.note && ` ${titles.note}`}
        {standard &&
          ' P is coloured on the normalized P’s range, on a square-root scale so that its many small probabilities (about 1/Nk each) show their structure: exp(S − m), before the division by l, reaches 1 and shows saturated.'}
        {(scales.q.clips || scales.k.clips || scales.v.clips) &&
          ' Q, K and V are coloured on the bulk of their values (4 robust standard deviations); magenta cells lie beyond it.'}
      </p>
    </section>
  );
}
