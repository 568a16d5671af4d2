// The tile a pane's loaded run steps through, as the engine resolved it from the request
// (an empty Br or Bc is the algorithm's own): the problem panel and the compare panes show it.

import { usePane } from '../store/pane-context.ts';
import { useApp } from '../store/store.ts';

export function RunTile() {
  const { pane } = usePane();
  const tile = useApp((s) => s.playback[pane]?.summary?.blocks);
  if (!tile) return <p className="dim note">Empty Br or Bc: the algorithm's own tile.</p>;
  return (
    <p className="dim note" data-testid="run-tile">
      Loaded run: Br × Bc = {tile.blockM} × {tile.blockN} (empty fields: the algorithm's own).
    </p>
  );
}
