// Invariants of a schedule's memory events, checked by the tests and usable by the UI to
// flag a broken schedule: nothing beyond capacity, and no two live tiles overlapping.
// A tile is live from its 'fill' (the write starts) to its 'release'. Static 'alloc'
// events may overlap on purpose (FA4's P inside S, the uneven K/V ring's shifting slots).

import type { MemoryEvent, ResourceSheet } from './events.ts';

interface Live {
  key: string;
  lo: number;
  hi: number;
  tile: string;
  buffer: string;
}

/** Byte (SMEM) or column (TMEM) range of an event. */
function range(e: MemoryEvent, sheet: ResourceSheet): [number, number] {
  if (e.space === 'tmem') {
    const lanes = sheet.tmem?.lanes ?? 128;
    return [e.offset, e.offset + e.bytes / (lanes * 4)];
  }
  return [e.offset, e.offset + e.bytes];
}

export function memoryViolations(memory: MemoryEvent[], sheet: ResourceSheet): string[] {
  const out: string[] = [];
  const events = memory.map((e, i) => ({ e, i })).sort((a, b) => a.e.t - b.e.t || a.i - b.i);
  const live: Record<string, Live[]> = { smem: [], tmem: [] };
  for (const { e } of events) {
    if (e.space !== 'smem' && e.space !== 'tmem') continue;
    const [lo, hi] = range(e, sheet);
    const cap = e.space === 'smem' ? sheet.smem.capacity_bytes : (sheet.tmem?.columns ?? 0);
    if (hi > cap || lo < 0) out.push(`${e.space} ${e.buffer} ${e.tile || '(alloc)'} at [${lo}, ${hi}) exceeds capacity ${cap}`);
    // Co-resident CTAs have their own SMEM/TMEM; the buffer prefix "ctaN/" keeps them apart.
    const cta = e.buffer.includes('/') ? e.buffer.slice(0, e.buffer.indexOf('/')) : '';
    const key = `${cta}|${e.tile}`;
    const list = live[e.space];
    if (e.action === 'fill') {
      for (const l of list) {
        if (l.key.split('|')[0] !== cta) continue;
        if (lo < l.hi && l.lo < hi)
          out.push(
            `t=${e.t.toFixed(1)}: ${e.space} ${e.buffer} ${e.tile} [${lo}, ${hi}) overlaps live ${l.buffer} ${l.tile} [${l.lo}, ${l.hi})`,
          );
      }
      list.push({ key, lo, hi, tile: e.tile, buffer: e.buffer });
    } else if (e.action === 'release') {
      const i = list.findIndex((l) => l.key === key && l.buffer === e.buffer);
      if (i < 0) out.push(`t=${e.t.toFixed(1)}: ${e.space} ${e.buffer} releases ${e.tile}, which is not live`);
      else list.splice(i, 1);
    }
  }
  return out;
}
