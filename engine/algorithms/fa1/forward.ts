// FlashAttention (Dao et al. 2022), Algorithm 1, as written. Outer loop over K/V blocks j,
// inner loop over Q blocks i. O, l and m live in HBM: every inner step loads Q_i, O_i,
// l_i, m_i, combines them with the new block using the normalized update
//   m_new = max(m_i, m~_ij)
//   l_new = e^(m_i - m_new) l_i + e^(m~_ij - m_new) l~_ij
//   O_i   = diag(l_new)^-1 (diag(l_i) e^(m_i - m_new) O_i + e^(m~_ij - m_new) P~_ij V_j)
// and writes O_i, l_i, m_i back. That HBM round trip per step is exactly what FA2 removed.
//
// P~_ij = exp(S_ij - m~_ij) is taken against the block's own max and multiplies V_j as
// stored, as Algorithm 1 of the paper (arXiv 2205.14135) writes it.
//
// Extensions beyond Algorithm 1 (which has no masks): the block mask at the tile size is
// built once before the loops; an empty tile is a skip step, as the paper's block-sparse
// variant (Algorithm 5) skips zero blocks; a K/V block whose every tile is empty is not
// loaded; a full tile runs no mask and a partial one checks every entry. Attention sinks enter as the initial state of the HBM
// statistics (m = sink, l = 1): a sink is a key with logit `sink` and a zero value row, so
// starting from it is the same as having processed it first.
//
// Precision: O in HBM is an fp32 accumulator (4 bytes per element, as the FA1 kernel's
// o_tmp), rounded to the input dtype when the run returns; l and m are fp32. Algorithm 1
// returns no LSE; the LSE FlashScope reports is m + log(l) from the final HBM statistics.

import { setUpExactRun } from '../run-setup.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import type { AttentionInputs } from '../../core/inputs.ts';
import { BLOCK_EMPTY, BLOCK_PARTIAL } from '../../core/block-mask.ts';
import { tileValues } from '../../trace/tracer.ts';
import type { Range } from '../../trace/events.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { accumulatePV, headSlice, maskTile, roundTile, scoreTile } from '../tile-math.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm, StepGenerator } from '../types.ts';
import { hasBlockMask, skippedTile, tileClasses } from '../tile-classes.ts';

/** HBM bytes of one FA1 inner step of `rows` query rows: Q, O, l, m read and O, l, m written (O, l, m at fp32). */
function innerStepBytes(p: AttentionProblem, rows: number, eb: number): number {
  return rows * p.d * eb + 2 * rows * (p.dv + 2) * 4;
}

function* runFa1(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const { blockM, blockN, sm, tr, eb, rounder } = setUpExactRun('fa1', p, x, opts);
  const trace = opts.trace;
  const dv = p.dv;
  const tRows = blockCount(p.nq, blockM);
  const tCols = blockCount(p.nk, blockN);
  // "HBM": the running output and statistics of every query row, all heads.
  const oHbm = new Float32Array(p.batch * p.hq * p.nq * dv);
  const lHbm = new Float32Array(p.batch * p.hq * p.nq);
  const mHbm = new Float32Array(p.batch * p.hq * p.nq);
  // On chip.
  const s = new Float32Array(blockM * blockN);
  const pt = new Float32Array(blockM * blockN);
  const pv = new Float32Array(blockM * dv);
  const mTile = new Float64Array(blockM);
  const lTile = new Float64Array(blockM);
  const mNew = new Float64Array(blockM);
  const lNew = new Float64Array(blockM);
  const alpha = new Float64Array(blockM); // e^(m_i - m_new)
  const beta = new Float64Array(blockM); // e^(m~_ij - m_new)
  const tileClass = tileClasses(p, sm, blockM, blockN);
  const tally = hasBlockMask(p);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hs = headSlice(p, b, h);
      const rowBase = (b * p.hq + h) * p.nq;
      const sink = p.sinks?.[h];
      // Line 2: O = 0, l = 0, m = -inf in HBM (l = 1, m = sink with a sink; see above).
      mHbm.fill(sink ?? -Infinity, rowBase, rowBase + p.nq);
      lHbm.fill(sink === undefined ? 0 : 1, rowBase, rowBase + p.nq);
      const all = { qBlock: -1, kvBlock: -1, rows: [0, p.nq] as Range, cols: [0, 0] as Range };
      let ev = tr.emit(
        'write',
        { b, h, outer: -1, inner: -1, tile: all, line: 'fa1.init', delta: { hbmWritten: { O: p.nq * dv * 4, l: p.nq * 4, m: p.nq * 4 } } },
        () => ({ tensors: ['O' as const, 'l' as const, 'm' as const] }),
      );
      if (ev) yield ev;

      for (let j = 0; j < tCols; j++) {
        const c0 = j * blockN;
        const c1 = Math.min(p.nk, c0 + blockN);
        const cols = c1 - c0;
        // A K/V block no Q block sees is never loaded: its tiles are skip steps that also spare K_j, V_j.
        let visited = false;
        for (let i = 0; i < tRows && !visited; i++) visited = tileClass(b, h, i, j) !== BLOCK_EMPTY;
        if (visited) {
          const kvTile = { qBlock: -1, kvBlock: j, rows: [0, 0] as Range, cols: [c0, c1] as Range };
          ev = tr.emit(
            'load',
            { b, h, outer: j, inner: -1, tile: kvTile, line: 'fa1.loadKV', delta: { hbmRead: { K: cols * p.d * eb, V: cols * dv * eb } } },
            () => ({ tensors: ['K' as const, 'V' as const] }),
          );
          if (ev) yield ev;
        }

        for (let i = 0; i < tRows; i++) {
          const r0 = i * blockM;
          const r1 = Math.min(p.nq, r0 + blockM);
          const rows = r1 - r0;
          const tile = { qBlock: i, kvBlock: j, rows: [r0, r1] as Range, cols: [c0, c1] as Range };
          const here = (line: string, delta: object) => ({ b, h, outer: j, inner: i, tile, line, delta });
          const cls = tileClass(b, h, i, j);
          // An empty tile spares its matmuls and its inner step's HBM round trip (the first of an unvisited column, K_j and V_j too).
          if (cls === BLOCK_EMPTY) {
            const spared = skippedTile(p, rows, cols, eb);
            const kvBytes = !visited && i === 0 ? (spared.skippedBytes ?? 0) : 0;
            const sparsity = { ...spared, skippedBytes: kvBytes + innerStepBytes(p, rows, eb) };
            ev = tr.emit('skip', here('fa1.skip', { sparsity }), () => ({}));
            if (ev) yield ev;
            continue;
          }
          const partial = cls === BLOCK_PARTIAL;
          const ro = rowBase + r0;
          ev = tr.emit(
            'load',
            here('fa1.loadQOlm', { hbmRead: { Q: rows * p.d * eb, O: rows * dv * 4, l: rows * 4, m: rows * 4 } }),
            () => ({
              tensors: ['Q' as const, 'O' as const, 'l' as const, 'm' as const],
            }),
          );
          if (ev) yield ev;

          // A full tile needs no mask at all; only a partial one runs it, on every entry.
          scoreTile(p, sm, x, hs, r0, rows, c0, cols, s, blockN, false);
          const qkDelta = { matmulFlops: 2 * rows * cols * p.d, nonMatmulFlops: rows * cols };
          ev = tr.emit('qk', here('fa1.qk', tally && !partial ? { ...qkDelta, sparsity: { tilesFull: 1 } } : qkDelta), () => ({
            s: tileValues(s, rows, cols, blockN),
          }));
          if (ev) yield ev;
          if (partial) {
            const bits = trace ? new Array<number>(rows * cols) : undefined;
            maskTile(p, sm, hs, r0, rows, c0, cols, s, blockN, bits);
            ev = tr.emit('mask', here('fa1.mask', { sparsity: { tilesPartial: 1, maskEvals: rows * cols } }), () => ({
              masked: bits ?? [],
              s: tileValues(s, rows, cols, blockN),
            }));
            if (ev) yield ev;
          }

          // m~_ij = rowmax(S_ij); m_new = max(m_i, m~_ij).
          for (let r = 0; r < rows; r++) {
            let mx = -Infinity;
            const so = r * blockN;
            for (let c = 0; c < cols; c++) if (s[so + c] > mx) mx = s[so + c];
            mTile[r] = mx;
            const mi = mHbm[ro + r];
            mNew[r] = mi > mx ? mi : mx;
          }
          ev = tr.emit('rowmax', here('fa1.rowmax', { nonMatmulFlops: rows * cols + rows }), () => ({
            tileMax: Array.from(mTile.subarray(0, rows)),
            mBefore: Array.from(mHbm.subarray(ro, ro + rows)),
            mAfter: Array.from(mNew.subarray(0, rows)),
          }));
          if (ev) yield ev;

          // P~_ij = exp(S_ij - m~_ij) against the block's own max; l~_ij sums the fp32 values.
          for (let r = 0; r < rows; r++) {
            const mr = mTile[r];
            const so = r * blockN;
            let sum = 0;
            if (mr === -Infinity) for (let c = 0; c < cols; c++) pt[so + c] = 0;
            else
              for (let c = 0; c < cols; c++) {
                pt[so + c] = Math.exp(s[so + c] - mr);
                sum += pt[so + c];
              }
            lTile[r] = sum;
          }
          roundTile(rounder, pt, rows, cols, blockN);
          ev = tr.emit('exp', here('fa1.exp', { nonMatmulFlops: 2 * rows * cols, expCount: rows * cols }), () => ({
            p: tileValues(pt, rows, cols, blockN),
            m: Array.from(mTile.subarray(0, rows)),
          }));
          if (ev) yield ev;

          // l_new = e^(m_i - m_new) l_i + e^(m~_ij - m_new) l~_ij. A side at -inf contributes nothing.
          for (let r = 0; r < rows; r++) {
            const mi = mHbm[ro + r];
            alpha[r] = mi === -Infinity ? 0 : Math.exp(mi - mNew[r]);
            beta[r] = mTile[r] === -Infinity ? 0 : Math.exp(mTile[r] - mNew[r]);
            lNew[r] = Math.fround(alpha[r] * lHbm[ro + r] + beta[r] * lTile[r]);
          }
          ev = tr.emit('rowsum', here('fa1.rowsum', { nonMatmulFlops: rows * cols + 7 * rows, expCount: 2 * rows }), () => ({
            tileSum: Array.from(lTile.subarray(0, rows)),
            lBefore: Array.from(lHbm.subarray(ro, ro + rows)),
            lAfter: Array.from(lNew.subarray(0, rows)),
          }));
          if (ev) yield ev;

          // O_i <- diag(l_i e^(m_i - m_new) / l_new) O_i: the old output is rescaled AND
          // renormalized every step, because O in HBM is always kept normalized.
          const factors = trace ? new Array<number>(rows) : [];
          for (let r = 0; r < rows; r++) {
            const f = lNew[r] > 0 ? (lHbm[ro + r] * alpha[r]) / lNew[r] : 0;
            if (trace) factors[r] = f;
            const oo = hs.oBase + (r0 + r) * dv;
            for (let e = 0; e < dv; e++) oHbm[oo + e] *= f;
          }
          ev = tr.emit('rescale', here('fa1.rescale', { nonMatmulFlops: rows * dv + 2 * rows, rescaleCount: rows }), () => ({
            factor: factors,
            mOld: Array.from(mHbm.subarray(ro, ro + rows)),
            mNew: Array.from(mNew.subarray(0, rows)),
          }));
          if (ev) yield ev;

          // O_i += (e^(m~_ij - m_new) / l_new) P~_ij V_j
          pv.fill(0, 0, rows * dv);
          accumulatePV(p, x, hs, pt, blockN, rows, c0, cols, pv, dv);
          const weights = trace ? new Array<number>(rows) : [];
          for (let r = 0; r < rows; r++) {
            const w = lNew[r] > 0 ? beta[r] / lNew[r] : 0;
            if (trace) weights[r] = w;
            const oo = hs.oBase + (r0 + r) * dv;
            if (w !== 0) for (let e = 0; e < dv; e++) oHbm[oo + e] += w * pv[r * dv + e];
          }
          ev = tr.emit('pv', here('fa1.pv', { matmulFlops: 2 * rows * cols * dv, nonMatmulFlops: 2 * rows * dv + rows }), () => ({
            o: tileValues(oHbm.subarray(hs.oBase + r0 * dv), rows, dv, dv),
            weight: weights,
          }));
          if (ev) yield ev;

          // Write O_i, l_i <- l_new, m_i <- m_new back to HBM.
          for (let r = 0; r < rows; r++) {
            lHbm[ro + r] = lNew[r];
            mHbm[ro + r] = mNew[r];
          }
          ev = tr.emit('write', here('fa1.write', { hbmWritten: { O: rows * dv * 4, l: rows * 4, m: rows * 4 } }), () => ({
            tensors: ['O' as const, 'l' as const, 'm' as const],
          }));
          if (ev) yield ev;
        }
      }
    }
  }
  const lse = new Float32Array(lHbm.length);
  for (let r = 0; r < lse.length; r++) lse[r] = lHbm[r] > 0 ? mHbm[r] + Math.log(lHbm[r]) : -Infinity;
  if (rounder) for (let e = 0; e < oHbm.length; e++) oHbm[e] = rounder(oHbm[e]);
  const result: AlgorithmResult = { o: oHbm, lse, counters: tr.counters, blocks: { blockM, blockN }, rowStats: { m: mHbm, l: lHbm } };
  return result;
}

export const fa1: StepAlgorithm = { id: 'fa1', name: 'FlashAttention (FA1, Algorithm 1)', blocks: resolveBlocks, run: runFa1 };
