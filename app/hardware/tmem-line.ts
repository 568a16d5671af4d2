// Tensor memory at the cursor as a line of text. On a phone the TMEM grid is scaled to a third
// and its labels would be about 4 px tall, so this line names each block and its columns.

import type { MemInterval } from '../../engine/api.ts';

/** Columns a TMEM block spans: one 32-bit word per lane per column. */
export const tmemColumns = (m: MemInterval, lanes: number) => m.bytes / (lanes * 4);

/** "S1 (K/V 3)" for a tile "S1.3", "O0" for "O0". */
export function tmemBlockLabel(m: MemInterval): string {
  const [name, blk] = m.tile.split('.');
  return blk === undefined ? name : `${name} (K/V ${blk})`;
}

/** "S0 (K/V 3) cols 0–127 · P0 (K/V 3) cols 0–63 (loading) · O0 cols 256–383", by column; S before the P written over it. */
export function tmemLine(blocks: readonly MemInterval[], lanes: number, cursor: number): string {
  if (blocks.length === 0) return 'Empty.';
  const isP = (m: MemInterval) => (m.tile.startsWith('P') ? 1 : 0);
  return [...blocks]
    .sort((a, b) => a.offset - b.offset || isP(a) - isP(b))
    .map((m) => {
      const end = m.offset + tmemColumns(m, lanes) - 1;
      return `${tmemBlockLabel(m)} cols ${m.offset}–${end}${cursor < m.ready ? ' (loading)' : ''}`;
    })
    .join(' · ');
}
