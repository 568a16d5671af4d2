// The update the current step performs, as TeX with the live numbers of one row put in.
// KaTeX renders the result in the formula panel; this module is pure string building.

import { findDescriptor, type TraceEvent, type RowHistoryEntry } from '../engine/api.ts';
import { backwardFormula } from './backward-formulas.ts';
import { texNum, type Formula } from './tex.ts';

/** Subtraction that reads well when the subtrahend is negative: a - (−3) instead of a − −3. */
const minus = (a: number | undefined, b: number | undefined) => `${texNum(a)} - ${b !== undefined && b < 0 ? `(${texNum(b)})` : texNum(b)}`;

function bytes(d: Partial<Record<string, number>> | undefined): string {
  if (!d) return '';
  return Object.entries(d)
    .map(([t, n]) => `\\text{${t}}: ${n}\\,\\mathrm{B}`)
    .join(',\\ ');
}

/**
 * `r` is the row inside the event's tile (0-based); `entry` is the row history of the current
 * K/V block (for the m values a rowsum or rescale step needs).
 */
export function formulaFor(algorithm: string, ev: TraceEvent, r: number, entry: RowHistoryEntry | undefined): Formula {
  const f = formulaNatural(algorithm, ev, r, entry);
  // FA4 keeps logits and maxima in log2 units and exponentiates base 2 (ev.base2).
  if (!ev.base2) return f;
  const base2 = (t: string) => t.replace(/\\exp\(([^()]*)\)/g, '2^{$1}').replace(/e\^\{/g, '2^{');
  return { symbolic: base2(f.symbolic), live: base2(f.live) };
}

function formulaNatural(algorithm: string, ev: TraceEvent, r: number, entry: RowHistoryEntry | undefined): Formula {
  const row = ev.tile.rows[0] + r;
  // Where the row statistics live decides the update's form: FA1 rewrites m and l in HBM per
  // K/V block (its paper's Algorithm 1), standard attention materializes P, the rest keep them on chip.
  const rowStats = findDescriptor(algorithm)?.rowStats;
  const fa1 = rowStats === 'hbm';
  const standard = rowStats === 'materialized';
  switch (ev.kind) {
    case 'load':
      return { symbolic: `\\text{HBM} \\rightarrow \\text{chip}: ${ev.tensors.join(',\\ ')}`, live: bytes(ev.delta.hbmRead) };
    case 'write':
      return { symbolic: `\\text{chip} \\rightarrow \\text{HBM}: ${ev.tensors.join(',\\ ')}`, live: bytes(ev.delta.hbmWritten) };
    case 'qk': {
      const cols = ev.tile.cols[1] - ev.tile.cols[0];
      const vals = ev.s.slice(r * cols, r * cols + cols);
      const mx = Math.max(...vals);
      const range = `S_{${row},\\,${ev.tile.cols[0]}:${ev.tile.cols[1]}} \\in [${texNum(Math.min(...vals))},\\ ${texNum(mx)}]`;
      // Quantized runs (sage's INT8, fa3's FP8): the codes' product and the two tile scales it is multiplied by.
      if (ev.qScale !== undefined && ev.kScale !== undefined) {
        return {
          symbolic:
            algorithm === 'sage'
              ? 'S_{ij} = (\\hat{Q}_i \\hat{K}_j^{\\top})\\,\\delta_Q\\,\\delta_K'
              : 'S_{ij} = \\tau\\,(\\hat{Q}_i \\hat{K}_j^{\\top})\\,\\delta_Q\\,\\delta_K',
          live: `${range},\\ \\delta_Q = ${texNum(ev.qScale)},\\ \\delta_K = ${texNum(ev.kScale)}`,
        };
      }
      return { symbolic: 'S_{ij} = \\tau \\, Q_i K_j^{\\top}', live: range };
    }
    case 'mask': {
      const cols = ev.tile.cols[1] - ev.tile.cols[0];
      const hidden = ev.masked.slice(r * cols, r * cols + cols).reduce((a, b) => a + b, 0);
      return {
        symbolic: 'S_{ij}[\\text{masked}] \\leftarrow -\\infty',
        live: `\\text{row } ${row}: ${hidden} \\text{ of } ${cols} \\text{ keys masked}`,
      };
    }
    case 'rowmax':
      return fa1
        ? {
            symbolic: '\\tilde m_{ij} = \\mathrm{rowmax}(S_{ij}),\\quad m^{\\text{new}}_i = \\max(m_i, \\tilde m_{ij})',
            live: `\\tilde m = ${texNum(ev.tileMax[r])},\\quad m^{\\text{new}}_{${row}} = \\max(${texNum(ev.mBefore[r])}, ${texNum(ev.tileMax[r])}) = ${texNum(ev.mAfter[r])}`,
          }
        : {
            symbolic: 'm_{\\text{new}} = \\max\\big(m_{\\text{old}},\\ \\mathrm{rowmax}(S_{ij})\\big)',
            live: `m_{${row}} = \\max(${texNum(ev.mBefore[r])},\\ ${texNum(ev.tileMax[r])}) = ${texNum(ev.mAfter[r])}`,
          };
    case 'exp': {
      const cols = ev.tile.cols[1] - ev.tile.cols[0];
      const vals = ev.p.slice(r * cols, r * cols + cols);
      const sum = vals.reduce((a, b) => a + b, 0);
      return {
        symbolic: fa1 ? '\\tilde P_{ij} = \\exp(S_{ij} - \\tilde m_{ij})' : 'P_{ij} = \\exp(S_{ij} - m_{\\text{new}})',
        live: `P_{${row},:} = e^{S_{${row},:} - (${texNum(ev.m[r])})},\\quad \\max = ${texNum(Math.max(...vals))},\\ \\textstyle\\sum = ${texNum(sum)}`,
      };
    }
    case 'rowsum':
      if (fa1) {
        const mt = entry?.tileMax?.[r];
        const mo = entry?.mBefore?.[r];
        const mn = entry?.mAfter?.[r];
        return {
          symbolic:
            '\\ell^{\\text{new}}_i = e^{m_i - m^{\\text{new}}_i}\\, \\ell_i + e^{\\tilde m_{ij} - m^{\\text{new}}_i}\\, \\tilde \\ell_{ij}',
          live: `\\ell_{${row}} = e^{${minus(mo, mn)}} \\cdot ${texNum(ev.lBefore[r])} + e^{${minus(mt, mn)}} \\cdot ${texNum(ev.tileSum[r])} = ${texNum(ev.lAfter[r])}`,
        };
      }
      if (standard) return { symbolic: '\\ell_i = \\mathrm{rowsum}(P_i)', live: `\\ell_{${row}} = ${texNum(ev.lAfter[r])}` };
      return {
        symbolic: '\\ell_{\\text{new}} = e^{m_{\\text{old}} - m_{\\text{new}}}\\, \\ell_{\\text{old}} + \\mathrm{rowsum}(P_{ij})',
        live: `\\ell_{${row}} = e^{${minus(entry?.mBefore?.[r], entry?.mAfter?.[r])}} \\cdot ${texNum(ev.lBefore[r])} + ${texNum(ev.tileSum[r])} = ${texNum(ev.lAfter[r])}`,
      };
    case 'rescale':
      return fa1
        ? {
            symbolic: 'O_i \\leftarrow \\frac{\\ell_i\\, e^{m_i - m^{\\text{new}}_i}}{\\ell^{\\text{new}}_i}\\, O_i',
            live: `O_{${row},:} \\leftarrow ${texNum(ev.factor[r])} \\cdot O_{${row},:}`,
          }
        : {
            symbolic: 'O_i \\leftarrow e^{m_{\\text{old}} - m_{\\text{new}}}\\, O_i',
            live: `O_{${row},:} \\leftarrow e^{${minus(ev.mOld[r], ev.mNew[r])}} \\cdot O_{${row},:} = ${texNum(ev.factor[r])} \\cdot O_{${row},:}`,
          };
    case 'pv': {
      const dv = ev.o.length / Math.max(1, ev.tile.rows[1] - ev.tile.rows[0]);
      const head = ev.o
        .slice(r * dv, r * dv + Math.min(3, dv))
        .map(texNum)
        .join(',\\ ');
      return {
        symbolic: fa1
          ? 'O_i \\leftarrow O_i + \\frac{e^{\\tilde m_{ij} - m^{\\text{new}}_i}}{\\ell^{\\text{new}}_i}\\, \\tilde P_{ij} V_j'
          : standard
            ? 'O_i = P_i V'
            : 'O_i \\leftarrow O_i + P_{ij} V_j',
        live: `O_{${row},\\,0:${Math.min(3, dv)}} = (${head}${dv > 3 ? ',\\ \\ldots' : ''})`,
      };
    }
    case 'normalize':
      return standard
        ? {
            symbolic: 'P_i \\leftarrow \\mathrm{diag}(\\ell_i)^{-1} P_i',
            live: `P_{${row},:} \\leftarrow P_{${row},:} / ${texNum(ev.l[r])},\\quad \\mathrm{LSE}_{${row}} = ${texNum(ev.lse[r])}`,
          }
        : {
            symbolic: 'O_i \\leftarrow \\mathrm{diag}(\\ell_i)^{-1} O_i,\\quad \\mathrm{LSE}_i = m_i + \\log \\ell_i',
            live: `O_{${row},:} \\leftarrow O_{${row},:} / ${texNum(ev.l[r])},\\quad \\mathrm{LSE}_{${row}} = ${texNum(ev.lse[r])}`,
          };
    case 'combine': {
      // Each split's weight in the merged output (its share of the softmax denominator), one per line so the side column holds them.
      const w = ev.splitLse[r].map((l, k) => `w_{${k}} &= ${texNum(Math.exp(l - ev.lse[r]))}`);
      return {
        symbolic: '\\mathrm{LSE} = \\log \\textstyle\\sum_k e^{\\mathrm{LSE}_k},\\quad w_k = e^{\\mathrm{LSE}_k - \\mathrm{LSE}}',
        // The step title names the row; a subscript here would read as a split index k.
        live: `\\begin{aligned} \\mathrm{LSE} &= ${texNum(ev.lse[r])} \\\\ ${w.join(' \\\\ ')} \\end{aligned}`,
      };
    }
    case 'skip':
      return { symbolic: '\\text{tile empty under the mask: } K_j, V_j \\text{ never loaded}', live: '' };
    default:
      return backwardFormula(ev, r);
  }
}
