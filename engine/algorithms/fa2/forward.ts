// FlashAttention-2 forward (Dao 2023, Algorithm 1). Outer loop over Q blocks, which are
// independent (that is what lets FA2 parallelize over sequence length); inner loop over
// K/V blocks with the running max m and sum l kept on chip, the output kept unnormalized
// and rescaled by exp(m_old - m_new), and a single division by l after the last block.
// The LSE m + log(l) is written for the backward pass.
//
// The rescale factor is exp(m_prev - m_new), m_prev the running max before this block; line
// 10 of the paper's Algorithm 1 (arXiv 2307.08691) prints it inverted, a typo the UI notes.
//
// Counter conventions (TRACE.md, "Counters", lists the closed forms the tests check).

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

function* runFa2(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const { blockM, blockN, sm, tr, eb, rounder } = setUpExactRun('fa2', p, x, opts);
  const trace = opts.trace;
  const dv = p.dv;
  const o = new Float32Array(p.batch * p.hq * p.nq * dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const tr_ = blockCount(p.nq, blockM);
  const tc = blockCount(p.nk, blockN);
  // On-chip buffers, sized for the largest tile and reused.
  const s = new Float32Array(blockM * blockN);
  const pt = new Float32Array(blockM * blockN);
  const acc = new Float32Array(blockM * dv);
  const m = new Float64Array(blockM);
  const l = new Float64Array(blockM);
  const factor = new Float64Array(blockM);
  const tileSum = new Float64Array(blockM);
  const tileClass = tileClasses(p, sm, blockM, blockN);
  const tally = hasBlockMask(p);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hs = headSlice(p, b, h);
      for (let i = 0; i < tr_; i++) {
        const r0 = i * blockM;
        const r1 = Math.min(p.nq, r0 + blockM);
        const rows = r1 - r0;
        const qTile = { qBlock: i, kvBlock: -1, rows: [r0, r1] as Range, cols: [0, 0] as Range };
        const at = (inner: number, line: string, tile = qTile) => ({ b, h, outer: i, inner, tile, line });
        let ev = tr.emit('load', { ...at(-1, 'fa2.loadQ'), delta: { hbmRead: { Q: rows * p.d * eb } } }, () => ({
          tensors: ['Q' as const],
        }));
        if (ev) yield ev;
        m.fill(-Infinity);
        l.fill(0);
        acc.fill(0);
        let first = true;
        for (let j = 0; j < tc; j++) {
          const c0 = j * blockN;
          const c1 = Math.min(p.nk, c0 + blockN);
          const cols = c1 - c0;
          const tile = { qBlock: i, kvBlock: j, rows: [r0, r1] as Range, cols: [c0, c1] as Range };
          const here = (line: string) => at(j, line, tile);
          const cls = tileClass(b, h, i, j);
          // An empty tile of the block mask is never loaded: the loop moves on to the next K/V tile.
          if (cls === BLOCK_EMPTY) {
            ev = tr.emit('skip', { ...here('fa2.skip'), delta: { sparsity: skippedTile(p, rows, cols, eb) } }, () => ({}));
            if (ev) yield ev;
            continue;
          }
          const partial = cls === BLOCK_PARTIAL;
          ev = tr.emit('load', { ...here('fa2.loadKV'), delta: { hbmRead: { K: cols * p.d * eb, V: cols * dv * eb } } }, () => ({
            tensors: ['K' as const, 'V' as const],
          }));
          if (ev) yield ev;

          // S = Q_i K_j^T with scale, softcap and ALiBi; masks come in their own phase.
          // A full tile needs no mask at all; only a partial one runs it, on every entry.
          scoreTile(p, sm, x, hs, r0, rows, c0, cols, s, blockN, false);
          const qkDelta = { matmulFlops: 2 * rows * cols * p.d, nonMatmulFlops: rows * cols };
          ev = tr.emit(
            'qk',
            { ...here('fa2.qk'), delta: tally && !partial ? { ...qkDelta, sparsity: { tilesFull: 1 } } : qkDelta },
            () => ({
              s: tileValues(s, rows, cols, blockN),
            }),
          );
          if (ev) yield ev;
          if (partial) {
            const bits = trace ? new Array<number>(rows * cols) : undefined;
            maskTile(p, sm, hs, r0, rows, c0, cols, s, blockN, bits);
            ev = tr.emit('mask', { ...here('fa2.mask'), delta: { sparsity: { tilesPartial: 1, maskEvals: rows * cols } } }, () => ({
              masked: bits ?? [],
              s: tileValues(s, rows, cols, blockN),
            }));
            if (ev) yield ev;
          }

          // m_new = max(m_old, rowmax(S)); the rescale factor exp(m_old - m_new) follows from it.
          const mBefore = trace ? Array.from(m.subarray(0, rows)) : [];
          const tileMax = trace ? new Array<number>(rows) : [];
          for (let r = 0; r < rows; r++) {
            let mx = -Infinity;
            const so = r * blockN;
            for (let c = 0; c < cols; c++) if (s[so + c] > mx) mx = s[so + c];
            if (trace) tileMax[r] = mx;
            const mNew = m[r] > mx ? m[r] : mx;
            // Rows that have seen no visible key keep m = -inf; their factor is 1 (nothing to rescale).
            factor[r] = first || mNew === -Infinity ? 1 : Math.exp(m[r] - mNew);
            m[r] = mNew;
          }
          ev = tr.emit(
            'rowmax',
            { ...here('fa2.rowmax'), delta: { nonMatmulFlops: rows * cols + rows + (first ? 0 : 2 * rows), expCount: first ? 0 : rows } },
            () => ({ tileMax, mBefore, mAfter: Array.from(m.subarray(0, rows)) }),
          );
          if (ev) yield ev;

          // P = exp(S - m_new). l sums the fp32 values; P·V uses P rounded to the input dtype.
          for (let r = 0; r < rows; r++) {
            const mr = m[r];
            const so = r * blockN;
            let sum = 0;
            if (mr === -Infinity) for (let c = 0; c < cols; c++) pt[so + c] = 0;
            else
              for (let c = 0; c < cols; c++) {
                const e = Math.exp(s[so + c] - mr);
                pt[so + c] = e;
                sum += pt[so + c];
              }
            tileSum[r] = sum;
          }
          roundTile(rounder, pt, rows, cols, blockN);
          ev = tr.emit('exp', { ...here('fa2.exp'), delta: { nonMatmulFlops: 2 * rows * cols, expCount: rows * cols } }, () => ({
            p: tileValues(pt, rows, cols, blockN),
            m: Array.from(m.subarray(0, rows)),
          }));
          if (ev) yield ev;

          const lBefore = trace ? Array.from(l.subarray(0, rows)) : [];
          for (let r = 0; r < rows; r++) l[r] = Math.fround(factor[r] * l[r] + tileSum[r]);
          ev = tr.emit('rowsum', { ...here('fa2.rowsum'), delta: { nonMatmulFlops: rows * cols + 2 * rows } }, () => ({
            tileSum: Array.from(tileSum.subarray(0, rows)),
            lBefore,
            lAfter: Array.from(l.subarray(0, rows)),
          }));
          if (ev) yield ev;

          if (!first) {
            for (let r = 0; r < rows; r++) {
              const f = factor[r];
              if (f === 1) continue;
              for (let e = 0; e < dv; e++) acc[r * dv + e] *= f;
            }
            ev = tr.emit('rescale', { ...here('fa2.rescale'), delta: { nonMatmulFlops: rows * dv, rescaleCount: rows } }, () => ({
              factor: Array.from(factor.subarray(0, rows)),
              mOld: mBefore,
              mNew: Array.from(m.subarray(0, rows)),
            }));
            if (ev) yield ev;
          }

          // O += P V_j
          accumulatePV(p, x, hs, pt, blockN, rows, c0, cols, acc, dv);
          ev = tr.emit('pv', { ...here('fa2.pv'), delta: { matmulFlops: 2 * rows * cols * dv } }, () => ({
            o: tileValues(acc, rows, dv, dv),
          }));
          if (ev) yield ev;
          first = false;
        }

        // O_i = O / l once; LSE = m + log(l). A sink joins the denominator here.
        const sink = p.sinks?.[h];
        const lseRow = trace ? new Array<number>(rows) : [];
        const lFinal = trace ? new Array<number>(rows) : [];
        for (let r = 0; r < rows; r++) {
          let mr = m[r];
          let lr = l[r];
          let scaleAcc = 1;
          if (sink !== undefined) {
            const mFin = Math.max(mr, sink);
            scaleAcc = mr === -Infinity ? 0 : Math.exp(mr - mFin);
            lr = lr * scaleAcc + Math.exp(sink - mFin);
            mr = mFin;
          }
          const inv = lr > 0 ? scaleAcc / lr : 0;
          const oo = hs.oBase + (r0 + r) * dv;
          for (let e = 0; e < dv; e++) {
            const v = acc[r * dv + e] * inv;
            acc[r * dv + e] = v;
            o[oo + e] = rounder ? rounder(acc[r * dv + e]) : acc[r * dv + e];
          }
          const lse = lr > 0 ? mr + Math.log(lr) : -Infinity;
          if (trace) {
            lFinal[r] = lr;
            lseRow[r] = lse;
          }
          lseOut[(b * p.hq + h) * p.nq + r0 + r] = lse;
        }
        const sinkWork = sink === undefined ? 0 : rows;
        ev = tr.emit(
          'normalize',
          { ...at(-1, 'fa2.normalize'), delta: { nonMatmulFlops: rows * dv + 3 * rows + 7 * sinkWork, expCount: 2 * sinkWork } },
          () => ({ o: tileValues(acc, rows, dv, dv), l: lFinal, lse: lseRow }),
        );
        if (ev) yield ev;
        ev = tr.emit('write', { ...at(-1, 'fa2.write'), delta: { hbmWritten: { O: rows * dv * eb, LSE: rows * 4 } } }, () => ({
          tensors: ['O' as const, 'LSE' as const],
        }));
        if (ev) yield ev;
      }
    }
  }
  const result: AlgorithmResult = { o, lse: lseOut, counters: tr.counters, blocks: { blockM, blockN } };
  return result;
}

export const fa2: StepAlgorithm = { id: 'fa2', name: 'FlashAttention-2', blocks: resolveBlocks, run: runFa2 };
