// A heatmap laid over the run's tiling by naming its axes (tile-geometry.ts), so the forward
// and backward views draw their matrices alike.

import { Heatmap, type HeatmapProps } from './Heatmap.tsx';
import { type Axis, axisLength, axisTile, stepRect, type TileGeometry } from './tile-geometry.ts';

type TileHeatmapProps = Omit<HeatmapProps, 'rows' | 'cols' | 'tileRows' | 'tileCols' | 'highlight'> & {
  geometry: TileGeometry;
  rows: Axis;
  cols: Axis;
};

export function TileHeatmap({ geometry: g, rows, cols, ...rest }: TileHeatmapProps) {
  return (
    <Heatmap
      {...rest}
      rows={axisLength(g, rows)}
      cols={axisLength(g, cols)}
      tileRows={axisTile(g, rows)}
      tileCols={axisTile(g, cols)}
      highlight={stepRect(g, rows, cols)}
    />
  );
}
