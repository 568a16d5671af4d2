// The formula panel's text for the backward pass's own phases: the update in symbols and
// the same update with one row's numbers. `r` is the row inside the event's tile.

import type { BackwardEvent } from '../engine/api.ts';
import { texNum, type Formula } from './tex.ts';

const head = (vals: number[], r: number, width: number): string => {
  const row = vals
    .slice(r * width, r * width + Math.min(3, width))
    .map(texNum)
    .join(',\\ ');
  return `(${row}${width > 3 ? ',\\ \\ldots' : ''})`;
};

export function backwardFormula(ev: BackwardEvent, r: number): Formula {
  const row = ev.tile.rows[0] + r;
  const rows = Math.max(1, ev.tile.rows[1] - ev.tile.rows[0]);
  const cols = Math.max(1, ev.tile.cols[1] - ev.tile.cols[0]);
  const j = `${ev.tile.cols[0]}:${ev.tile.cols[1]}`;
  switch (ev.kind) {
    case 'dsum':
      return { symbolic: 'D_i = \\mathrm{rowsum}(dO_i \\circ O_i)', live: `D_{${row}} = ${texNum(ev.D[r])}` };
    case 'recompute': {
      const vals = ev.p.slice(r * cols, r * cols + cols);
      return {
        symbolic: 'P_{ij} = \\exp(S_{ij} - L_i)',
        live: `P_{${row},\\,${j}} = e^{S_{${row},\\,${j}} - (${texNum(ev.lse[r])})},\\quad \\max = ${texNum(Math.max(...vals))}`,
      };
    }
    case 'dv': {
      const dv = ev.dV.length / cols;
      return {
        symbolic: 'dV_j \\leftarrow dV_j + P_{ij}^{\\top} dO_i',
        live: `dV_{${ev.tile.cols[0]},\\,0:${Math.min(3, dv)}} = ${head(ev.dV, 0, dv)}`,
      };
    }
    case 'dp': {
      const vals = ev.dP.slice(r * cols, r * cols + cols);
      return {
        symbolic: 'dP_{ij} = dO_i V_j^{\\top}',
        live: `dP_{${row},\\,${j}} \\in [${texNum(Math.min(...vals))},\\ ${texNum(Math.max(...vals))}]`,
      };
    }
    case 'ds': {
      const vals = ev.dS.slice(r * cols, r * cols + cols);
      const big = vals.reduce((m, v) => (Math.abs(v) > Math.abs(m) ? v : m), 0);
      return {
        symbolic: ev.softcapGrad
          ? 'dS_{ij} = P_{ij} \\circ (dP_{ij} - D_i) \\circ (1 - \\tanh^2(s_{ij}/c))'
          : 'dS_{ij} = P_{ij} \\circ (dP_{ij} - D_i)',
        live: `D_{${row}} = ${texNum(ev.D[r])},\\quad \\text{largest } |dS_{${row},\\,${j}}| = ${texNum(big)}`,
      };
    }
    case 'dq': {
      const d = ev.dQ.length / rows;
      const how = ev.atomic ? '\\text{atomic add}' : '\\text{read-modify-write}';
      return {
        symbolic: `dQ_i \\leftarrow dQ_i + \\tau\\, dS_{ij} K_j\\quad(${how})`,
        live: `dQ_{${row},\\,0:${Math.min(3, d)}} = ${head(ev.dQ, r, d)},\\quad \\text{from column blocks } ${ev.contributors.join(',\\ ')}`,
      };
    }
    case 'dk': {
      const d = ev.dK.length / cols;
      return {
        symbolic: 'dK_j \\leftarrow dK_j + \\tau\\, dS_{ij}^{\\top} Q_i',
        live: `dK_{${ev.tile.cols[0]},\\,0:${Math.min(3, d)}} = ${head(ev.dK, 0, d)}`,
      };
    }
    case 'dqconvert': {
      const d = ev.dQ.length / rows;
      return {
        symbolic: 'dQ_i = \\mathrm{convert}(dQ^{\\text{accum}}_i)',
        live: `dQ_{${row},\\,0:${Math.min(3, d)}} = ${head(ev.dQ, r, d)}`,
      };
    }
  }
}
