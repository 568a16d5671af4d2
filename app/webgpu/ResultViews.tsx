// The WebGPU panel's two result views: the downsampled O heatmap (diverging colours around
// zero, symmetric range) and LSE per query row as a line.

import { useEffect, useRef } from 'react';
import type { Grid } from './downsample.ts';

function diverging(t: number): [number, number, number] {
  // t in [-1, 1]: blue (negative) → near-white (0) → red (positive)
  const a = Math.min(1, Math.abs(t));
  return t < 0 ? [Math.round(245 - 190 * a), Math.round(245 - 130 * a), 245] : [245, Math.round(245 - 170 * a), Math.round(245 - 190 * a)];
}

export function GridHeatmap({ grid }: { grid: Grid }) {
  const ref = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const c = ref.current;
    const g = c?.getContext('2d');
    if (!c || !g) return;
    c.width = grid.cols;
    c.height = grid.rows;
    let max = 0;
    for (const v of grid.data) if (Number.isFinite(v)) max = Math.max(max, Math.abs(v));
    const img = g.createImageData(grid.cols, grid.rows);
    for (let i = 0; i < grid.data.length; i++) {
      const [r, gg, b] = diverging(max > 0 ? grid.data[i] / max : 0);
      img.data.set([r, gg, b, 255], i * 4);
    }
    g.putImageData(img, 0, 0);
  }, [grid]);
  return <canvas ref={ref} className="wg-heatmap" aria-label="output heatmap" role="img" />;
}

export function LseChart({ lse }: { lse: (number | null)[] }) {
  const W = 360;
  const H = 140;
  const finite = lse.filter((x): x is number => x !== null);
  if (finite.length === 0) return <div className="wg-dim">every row is fully masked (LSE = −∞)</div>;
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  const span = hi - lo || 1;
  const step = Math.max(1, Math.ceil(lse.length / W));
  const segs: string[] = [];
  let cur: string[] = [];
  for (let i = 0; i < lse.length; i += step) {
    const block = lse.slice(i, i + step).filter((x): x is number => x !== null);
    if (block.length === 0) {
      if (cur.length) segs.push(cur.join(' '));
      cur = [];
      continue;
    }
    const mean = block.reduce((a, b) => a + b, 0) / block.length;
    cur.push(`${((i / lse.length) * W).toFixed(1)},${(H - 14 - ((mean - lo) / span) * (H - 24)).toFixed(1)}`);
  }
  if (cur.length) segs.push(cur.join(' '));
  return (
    <svg width={W} height={H} className="wg-lse" role="img" aria-label="LSE per row">
      {segs.map((s, i) => (
        <polyline key={i} points={s} fill="none" stroke="var(--accent)" strokeWidth={1.2} />
      ))}
      <text x={2} y={10} fontSize={10} fill="var(--dim)">
        {hi.toFixed(2)}
      </text>
      <text x={2} y={H - 2} fontSize={10} fill="var(--dim)">
        {lo.toFixed(2)} (row 0 … {lse.length - 1})
      </text>
    </svg>
  );
}
