// Breakpoints of the backward pass: the first NaN/Inf in a gradient, and an entry of dS
// larger in magnitude than a threshold (where a gradient blows up). Pure functions over
// one event, like breakpoints.ts; the reason is a sentence for the breakpoint list.

import type { TraceEvent } from '../trace/events.ts';

/** The gradient arrays an event carries, by the name a person knows them by. */
function gradientsOf(ev: TraceEvent): [string, number[]][] {
  switch (ev.kind) {
    case 'dsum':
      return [['D', ev.D]];
    case 'dp':
      return [['dP', ev.dP]];
    case 'ds':
      return [['dS', ev.dS]];
    case 'dq':
    case 'dqconvert':
      return [['dQ', ev.dQ]];
    case 'dk':
      return [['dK', ev.dK]];
    case 'dv':
      return [['dV', ev.dV]];
    default:
      return [];
  }
}

/** Where in the tile element `i` of a rows×width array is, as "row r, column c" of the whole matrix. */
function place(ev: TraceEvent, name: string, i: number, length: number): string {
  const keyRows = name === 'dK' || name === 'dV';
  const [a0, a1] = keyRows ? ev.tile.cols : ev.tile.rows;
  const width = Math.max(1, Math.round(length / Math.max(1, a1 - a0)));
  const r = a0 + Math.floor(i / width);
  const c = (name === 'dP' || name === 'dS' ? ev.tile.cols[0] : 0) + (i % width);
  return name === 'D' ? `row ${r}` : `[${r}, ${c}]`;
}

/** Describes the first NaN or ±Inf in a gradient this event produces, or undefined. */
export function gradientNonFinite(ev: TraceEvent): string | undefined {
  for (const [name, values] of gradientsOf(ev)) {
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (!Number.isFinite(v)) return `${name}${place(ev, name, i, values.length)} is ${v}`;
    }
  }
  return undefined;
}

/** Describes the largest |dS| of a dS step when it exceeds `threshold`, or undefined. */
export function dsAbove(ev: TraceEvent, threshold: number): string | undefined {
  if (ev.kind !== 'ds') return undefined;
  let at = -1;
  let big = threshold;
  for (let i = 0; i < ev.dS.length; i++) {
    const a = Math.abs(ev.dS[i]);
    if (a > big) {
      big = a;
      at = i;
    }
  }
  return at >= 0 ? `|dS${place(ev, 'dS', at, ev.dS.length)}| = ${big.toPrecision(4)} > ${threshold}` : undefined;
}
