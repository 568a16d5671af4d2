// Q, Kᵀ, V, S, P and O of the current head with the current tile highlighted. Colour
// scales come from the whole run's value ranges, so colours do not shift while stepping.

import { useMemo } from 'react';
import { useApp, type MatrixId } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import { colourScale } from './colour.ts';
import type { Rect } from './Heatmap.tsx';
import { TileHeatmap } from './TileHeatmap.tsx';
import type { Axis, TileGeometry } from './tile-geometry.ts';
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
  const [r0, r1] = frame.event.tile.rows;
  const geometry: TileGeometry = {
    nq: frame.nq,
    nk: frame.nk,
    d: inputs.d,
    dv: frame.dv,
    ...summary.blocks,
    rows: frame.event.tile.rows,
    cols: frame.event.tile.cols,
  };
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
  // Q and O are as tall as their rows beside S; the maps across keys and V take the full size.
  const map = (rows: Axis, cols: Axis) => ({
    geometry,
    rows,
    cols,
    maxPx: rows === 'q' && cols !== 'k' ? Math.max(side(frame.nq, frame.nk), 40) : big,
  });
  return (
    <section className="view heatmaps" aria-label="Tile heatmaps">
      <div className="hm-layout">
        <TileHeatmap {...map('q', 'd')} id="Q" title="Q" data={inputs.q} scale={scales.q} onTileClick={zoom('Q')} />
        <TileHeatmap {...map('d', 'k')} id="Kᵀ" title="Kᵀ" data={inputs.k} transposed scale={scales.k} onTileClick={zoom('K')} />
        <TileHeatmap {...map('k', 'dv')} id="V" title="V" data={inputs.v} scale={scales.v} onTileClick={zoom('V')} />
        <TileHeatmap
          {...map('q', 'k')}
          id="S"
          title={titles.s}
          data={frame.s}
          version={frame.seq}
          changed={sChanged}
          mask={frame.mask}
          scale={scales.s}
          onTileClick={zoom('S')}
          tileInfo={tileInfo}
        />
        <TileHeatmap
          {...map('q', 'k')}
          id="P"
          title={titles.p}
          data={frame.p}
          version={frame.seq}
          changed={sChanged}
          scale={scales.p}
          onTileClick={zoom('P')}
          marks={flushed}
          marksLabel={FLUSHED_LABEL}
          tileInfo={tileInfo}
        />
        <TileHeatmap
          {...map('q', 'dv')}
          id="O"
          title={fa1 ? 'O (HBM-resident, rewritten)' : 'O'}
          data={frame.o}
          version={frame.seq}
          changed={oChanged}
          scale={scales.o}
          markRows={fa1 && frame.event.kind === 'write' ? [r0, r1] : undefined}
          onTileClick={zoom('O')}
        />
      </div>
      <p className="hint">
        Click a tile to see its numbers. Yellow: the tile the current step works on. Head b={frame.b}, h={frame.h}.
        {rowStats === 'on-chip' &&
          ' O is coloured on the final output’s range: rows still accumulating (not yet divided by ℓ) can exceed it and show saturated.'}
        {titles.note && ` ${titles.note}`}
        {standard &&
          ' P is coloured on the normalized P’s range, on a square-root scale so that its many small probabilities (about 1/Nk each) show their structure: exp(S − m), before the division by ℓ, reaches 1 and shows saturated.'}
        {(scales.q.clips || scales.k.clips || scales.v.clips) &&
          ' Q, K and V are coloured on the bulk of their values (4 robust standard deviations); magenta cells lie beyond it.'}
      </p>
    </section>
  );
}
