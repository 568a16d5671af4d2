// Breakpoint matching. A breakpoint "hits" at a trace position; the reason is a sentence a
// person can read in the breakpoint list. Kept free of session state so it is testable alone.

import type { TraceEvent } from '../trace/events.ts';
import type { BreakpointSpec } from './protocol.ts';
import { dsAbove, gradientNonFinite } from './backward-breakpoints.ts';

/** Values that must stay finite; -Infinity is legitimate in S after masking and in m before the first visible key. */
function badValue(kind: 'signed' | 'finite', v: number): boolean {
  if (Number.isNaN(v) || v === Infinity) return true;
  return kind === 'finite' && v === -Infinity;
}

function firstBad(values: number[] | undefined, kind: 'signed' | 'finite'): number {
  if (!values) return -1;
  for (let i = 0; i < values.length; i++) if (badValue(kind, values[i])) return i;
  return -1;
}

/** Describes the first NaN/Inf the event carries, or undefined. */
export function nonFiniteIn(ev: TraceEvent): string | undefined {
  const checks: [string, number[] | undefined, 'signed' | 'finite'][] = [];
  switch (ev.kind) {
    case 'qk':
    case 'mask':
      checks.push(['S', ev.s, 'signed']);
      break;
    case 'rowmax':
      checks.push(['m', ev.mAfter, 'signed']);
      break;
    case 'exp':
      checks.push(['P', ev.p, 'finite']);
      break;
    case 'rowsum':
      checks.push(['l', ev.lAfter, 'finite']);
      break;
    case 'rescale':
      checks.push(['rescale factor', ev.factor, 'finite']);
      break;
    case 'pv':
    case 'normalize':
    case 'combine':
      checks.push(['O', ev.o, 'finite']);
      break;
    default:
      break;
  }
  for (const [name, values, kind] of checks) {
    const i = firstBad(values, kind);
    if (i >= 0) return `${name} has ${values![i]} at element ${i} of the tile`;
  }
  return undefined;
}

/** Does `bp` stop at `ev`? `prev` is the event before it (for "entering a tile"). Returns the reason. */
export function matchBreakpoint(bp: BreakpointSpec, ev: TraceEvent, prev: TraceEvent | undefined): string | undefined {
  switch (bp.kind) {
    case 'tile': {
      const inTile = (e: TraceEvent | undefined) => !!e && e.tile.qBlock === bp.qBlock && e.tile.kvBlock === bp.kvBlock;
      return inTile(ev) && !(inTile(prev) && prev!.b === ev.b && prev!.h === ev.h)
        ? `entered tile (${bp.qBlock}, ${bp.kvBlock})`
        : undefined;
    }
    case 'rescale-row': {
      if (ev.kind !== 'rescale') return undefined;
      const [r0, r1] = ev.tile.rows;
      if (bp.row < r0 || bp.row >= r1) return undefined;
      const f = ev.factor[bp.row - r0];
      return f !== 1 ? `row ${bp.row} rescaled by ${f.toPrecision(4)}` : undefined;
    }
    case 'nonfinite':
      return nonFiniteIn(ev);
    case 'm-jump': {
      if (ev.kind !== 'rowmax') return undefined;
      for (let r = 0; r < ev.mAfter.length; r++) {
        const before = ev.mBefore[r];
        if (!Number.isFinite(before)) continue;
        const grow = ev.mAfter[r] - before;
        if (grow > bp.threshold) return `m of row ${ev.tile.rows[0] + r} grew by ${grow.toPrecision(4)} (> ${bp.threshold})`;
      }
      return undefined;
    }
    case 'phase':
      return ev.kind === bp.phase ? `phase ${bp.phase}` : undefined;
    case 'grad-nonfinite':
      return gradientNonFinite(ev);
    case 'ds-above':
      return dsAbove(ev, bp.threshold);
  }
}

export function describeBreakpoint(bp: BreakpointSpec): string {
  switch (bp.kind) {
    case 'tile':
      return `Tile (${bp.qBlock}, ${bp.kvBlock})`;
    case 'rescale-row':
      return `Rescale in row ${bp.row}`;
    case 'nonfinite':
      return 'First NaN/Inf';
    case 'm-jump':
      return `m grows by more than ${bp.threshold}`;
    case 'phase':
      return `Phase ${bp.phase}`;
    case 'grad-nonfinite':
      return 'First NaN/Inf in a gradient';
    case 'ds-above':
      return `|dS| above ${bp.threshold}`;
  }
}
