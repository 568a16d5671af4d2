// The two CTAs of a cta_group::2 pair as FA4's schedules build them: one kernel holds both
// (they sit on two SMs of one cluster), so the timeline shows the leader's and the peer's
// roles side by side and the barriers they share are single objects.
//
// Which CTA leads: block index mod 2 == 0 (flash_fwd_sm100.py@0251105a l. 945-950;
// sm100_hd256_2cta_fmha_forward.py@0251105a l. 630, 1070-1071). The peer's units carry a
// ".peer" suffix: the same unit families on the other SM, so each SM's pipes stay its own.

import type { ResourceSheet } from '../../hw/events.ts';
import type { Kernel, MemSpec } from '../../hw/scheduler.ts';

export interface CtaSide {
  /** "leader" / "peer" in a pair, "" for a lone CTA. */
  name: '' | 'leader' | 'peer';
  /** mma_tile_coord_v: 0 for the leader, 1 for the peer. */
  rank: 0 | 1;
  /** Prefix of this CTA's roles and buffers, after the kernel's own "ctaN/" prefix. */
  tag: string;
  /** The unit of this CTA's SM. */
  unit: (u: string) => string;
}

/** The CTAs one build adds: one alone, or leader then peer. */
export function ctaSides(ctaGroup: 1 | 2): CtaSide[] {
  if (ctaGroup === 1) return [{ name: '', rank: 0, tag: '', unit: (u) => u }];
  return [
    { name: 'leader', rank: 0, tag: 'leader/', unit: (u) => u },
    { name: 'peer', rank: 1, tag: 'peer/', unit: (u) => `${u}.peer` },
  ];
}

/** A unit that belongs to the peer CTA's SM. */
export function isPeerUnit(unit: string): boolean {
  return unit.endsWith('.peer');
}

/** A TMEM fill or release of one CTA's buffer, as the schedules hand it to an op. */
export type TmemAccess = (side: CtaSide, name: string, col: number, cols: number, action: 'fill' | 'release', tile: string) => MemSpec;

/**
 * Lays out every CTA's SMEM buffers (all but `skip`) and TMEM buffers from the sheet, each
 * under its CTA's tag, and returns how the schedule names a TMEM access of one of them.
 */
export function allocCtaMemory(
  k: Kernel,
  sides: readonly CtaSide[],
  sheet: ResourceSheet,
  prefix: string,
  lanes: number,
  skip: readonly string[],
): TmemAccess {
  for (const side of sides) {
    for (const b of sheet.smem.buffers)
      if (!skip.includes(b.name))
        k.alloc({ space: 'smem', buffer: `${prefix}${side.tag}${b.name}`, stage: b.stage, offset: b.offset, bytes: b.bytes });
    for (const b of sheet.tmem?.buffers ?? [])
      k.alloc({ space: 'tmem', buffer: `${prefix}${side.tag}tmem.${b.name}`, stage: 0, offset: b.column, bytes: b.columns * lanes * 4 });
  }
  return (side, name, col, cols, action, tile) => ({
    space: 'tmem',
    buffer: `${prefix}${side.tag}tmem.${name}`,
    stage: 0,
    offset: col,
    bytes: cols * lanes * 4,
    action,
    tile,
  });
}
