// What the compare panes differ in besides their algorithm, said in words above the
// difference table: a kernel's default tile can dwarf the algorithm's own effect on HBM
// traffic, so a reader must see "pane 1 runs 16×16, pane 2 128×128" before the ratios.

export interface PaneFacts {
  /** 1-based pane number as its title shows it. */
  pane: number;
  /** The tile the pane's run uses (Br × Bc). */
  tile: [number, number];
  dtype: string;
  /** The GPU its hardware views model; absent for an algorithm without a hardware model. */
  gpu?: string;
  /** The tile a shipped kernel is built with, for a pane that models one; absent where the tile is free. */
  kernelTile?: [number, number];
  /** The algorithm's name, for sentences about its kernel. */
  name?: string;
}

const listed = (panes: readonly PaneFacts[], values: string[]) => values.map((v, i) => `pane ${panes[i].pane} ${v}`).join(', ');
const distinct = (values: (string | undefined)[]) => new Set(values.filter((v) => v !== undefined)).size > 1;

export interface PaneDifferences {
  /** One sentence per way the panes differ, beyond their algorithm and switches. */
  lines: string[];
  /** True when the tiles differ, so "Same tiles in every pane" has something to do. */
  tilesDiffer: boolean;
}

export function paneDifferences(panes: readonly PaneFacts[]): PaneDifferences {
  const tiles = panes.map((p) => `${p.tile[0]}×${p.tile[1]}`);
  const lines: string[] = [];
  const tilesDiffer = distinct(tiles);
  if (tilesDiffer)
    lines.push(
      `Tiles differ (${listed(panes, tiles)}): HBM traffic, FLOPs and rescale counts change with the tile as much as with the algorithm.`,
    );
  const dtypes = panes.map((p) => p.dtype);
  if (distinct(dtypes)) lines.push(`Input precision differs (${listed(panes, dtypes)}): errors against float64 follow the dtype first.`);
  const gpus = panes.map((p) => p.gpu);
  if (distinct(gpus))
    lines.push(
      `Hardware views model different GPUs (${panes
        .map((p) => (p.gpu ? `pane ${p.pane} ${p.gpu}` : ''))
        .filter(Boolean)
        .join(', ')}): simulated times compare GPUs as well as kernels.`,
    );
  if (lines.length === 0)
    lines.push(`Same tiles (${tiles[0] ?? '—'}), dtype and GPU in every pane: the columns differ by algorithm and switches only.`);
  return { lines, tilesDiffer };
}

/** What "Same tiles in every pane" does: each pane's new tile, and which panes keep their kernel's. */
export interface SameTilesPlan {
  /** The tile the free panes take: the first kernel pane's own, else pane 1's. */
  target: [number, number];
  /** Per pane (same order as given), the tile it gets. */
  tiles: [number, number][];
  /** The panes that keep their kernel's tile, and why, in one sentence (empty when none). */
  note: string;
  /** False when no pane would change (only kernels with tiles of their own differ). */
  changes: boolean;
}

const tileText = (t: readonly [number, number]) => `${t[0]}×${t[1]}`;

export function sameTilesPlan(panes: readonly PaneFacts[]): SameTilesPlan {
  const fixed = panes.filter((p) => p.kernelTile);
  const target = fixed[0]?.kernelTile ?? panes[0]?.tile ?? [16, 16];
  const tiles = panes.map((p) => p.kernelTile ?? target);
  const changes = panes.some((p, i) => tileText(p.tile) !== tileText(tiles[i]));
  let note = '';
  if (fixed.length > 0) {
    const kept = fixed.map((p) => `pane ${p.pane}: ${p.name ?? 'its kernel'} at ${tileText(p.kernelTile!)}`).join('; ');
    const unequal = new Set(fixed.map((p) => tileText(p.kernelTile!))).size > 1;
    note =
      `${fixed.length === 1 ? 'Keeps its kernel’s tile' : 'Keep their kernels’ tiles'}: ${kept}. ` +
      'A shipped kernel is built for its tile (MMA shape, shared-memory layout, stage count), so another tile would not be that kernel' +
      (unequal ? '; these kernels’ tiles differ, so the panes cannot all share one.' : '.');
  }
  return { target, tiles, note, changes };
}
