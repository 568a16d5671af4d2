// FA1 keeps m and ℓ for every query row in HBM and rewrites them on every step; this shows
// both vectors with the rows the current step rewrites marked.

import { useMemo } from 'react';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';
import { colourScale } from './colour.ts';
import { Heatmap } from './Heatmap.tsx';

function finiteRange(a: Float64Array): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of a) if (Number.isFinite(v)) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
  return lo > hi ? [0, 1] : lo === hi ? [lo - 1, hi + 1] : [lo, hi];
}

export function HbmStateView() {
  const { pane } = usePane();
  const frame = useApp((s) => s.playback[pane].frame);
  const blockM = useApp((s) => s.playback[pane].summary?.blocks.blockM ?? 1);
  const mScale = useMemo(() => frame && colourScale('sequential', finiteRange(frame.m)), [frame]);
  const lScale = useMemo(() => frame && colourScale('sequential', finiteRange(frame.l)), [frame]);
  if (!frame || !mScale || !lScale) return null;
  const [r0, r1] = frame.event.tile.rows;
  const hl = r1 > r0 ? { r0, r1, c0: 0, c1: 1 } : undefined;
  const rewriting = frame.event.kind === 'write' ? ([r0, r1] as [number, number]) : undefined;
  return (
    <section className="view hbm-state" aria-label="HBM-resident m and ℓ">
      <h3>HBM-resident m and ℓ (FA1 rewrites them every step)</h3>
      <div className="hm-grid">
        <Heatmap
          id="m"
          title="m (HBM)"
          data={frame.m}
          version={frame.seq}
          rows={frame.nq}
          cols={1}
          scale={mScale}
          tileRows={blockM}
          tileCols={1}
          highlight={hl}
          markRows={rewriting}
          maxPx={220}
        />
        <Heatmap
          id="l"
          title="ℓ (HBM)"
          data={frame.l}
          version={frame.seq}
          rows={frame.nq}
          cols={1}
          scale={lScale}
          tileRows={blockM}
          tileCols={1}
          highlight={hl}
          markRows={rewriting}
          maxPx={220}
        />
      </div>
    </section>
  );
}
