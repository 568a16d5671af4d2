// Live numbers for the two updates of the backward that a person checks by hand: one
// entry of dS_ij = P_ij (dP_ij − D_i), and one entry of the dQ update dQ_i += τ dS_ij K_j.
// The event alone does not hold P, dP or K, so these read them from the frame the
// debugger shows (recomputed P, dP) and the head's inputs (K). Pure string building.

import type { TraceEvent } from '../engine/api.ts';
import { texNum } from './tex.ts';

export interface BackwardLiveData {
  /** [nq×nk] recomputed P, dP and dS of the head, as the frame holds them. */
  p: ArrayLike<number>;
  dP: ArrayLike<number>;
  dS: ArrayLike<number>;
  /** [nk×d] K of the head. */
  k: ArrayLike<number>;
  nk: number;
  d: number;
  /** The softmax scale τ. */
  scale: number;
  /** FA3 keeps dQ's partial sums without τ until its postprocess step. */
  scaleLater: boolean;
}

const paren = (x: number) => (x < 0 ? `(${texNum(x)})` : texNum(x));

/** Column of the tile (absolute) whose entry of row `r` is largest in magnitude: the one worth looking at. */
function biggest(values: number[], r: number, cols: number): number {
  let at = 0;
  for (let c = 1; c < cols; c++) if (Math.abs(values[r * cols + c]) > Math.abs(values[r * cols + at])) at = c;
  return at;
}

/** TeX lines with this row's numbers for a ds or dq step; undefined for other steps. */
export function backwardLive(ev: TraceEvent, r: number, x: BackwardLiveData): string[] | undefined {
  const [c0, c1] = ev.tile.cols;
  const cols = c1 - c0;
  const row = ev.tile.rows[0] + r;
  if (ev.kind === 'ds') {
    const c = biggest(ev.dS, r, cols);
    const col = c0 + c;
    const p = x.p[row * x.nk + col];
    const dp = x.dP[row * x.nk + col];
    const D = ev.D[r];
    const cap = ev.softcapGrad?.[r * cols + c];
    const lhs = `dS_{${row},${col}}`;
    const body = `${texNum(p)} \\cdot \\big(${texNum(dp)} - ${paren(D)}\\big)${cap !== undefined ? ` \\cdot ${texNum(cap)}` : ''}`;
    // The symbols are on the line above (the formula panel's update); this one is all numbers.
    return [`${lhs} = ${body} = ${texNum(ev.dS[r * cols + c])}`];
  }
  if (ev.kind === 'dq') {
    const rows = ev.tile.rows[1] - ev.tile.rows[0];
    const d = ev.dQ.length / Math.max(1, rows);
    const after = ev.dQ[r * d];
    // The add of this step, from the dS tile already shown (the frame's dS) and K.
    let sum = 0;
    for (let c = c0; c < c1; c++) {
      const ds = x.dS[row * x.nk + c];
      if (Number.isFinite(ds)) sum += ds * x.k[c * x.d];
    }
    const tau = x.scaleLater ? 1 : x.scale;
    const add = tau * sum;
    const tauTex = x.scaleLater ? '' : `${texNum(x.scale)} \\cdot `;
    return [
      `dQ_{${row},0} \\leftarrow dQ_{${row},0} + ${x.scaleLater ? '' : '\\tau '}\\textstyle\\sum_{c=${c0}}^{${c1 - 1}} dS_{${row},c}\\,K_{c,0}`,
      `= ${paren(after - add)} + ${tauTex}${paren(sum)} = ${texNum(after)}`,
    ];
  }
  return undefined;
}
