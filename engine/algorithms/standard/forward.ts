// Standard attention, the baseline of the FlashAttention paper (Algorithm 0): three passes
// with the N×N matrices materialized in HBM.
//   1. S = Q K^T (scale, modifiers, mask), written to HBM.
//   2. S read back; P = softmax(S) row by row; P (and the LSE) written to HBM.
//   3. P and V read; O = P V written.
// Each pass walks Q in row blocks of blockM rows (the granularity of the trace); a row
// block always spans every key, so "tile" here means a full-width strip. S is stored in
// fp32 and P in the input dtype, the precision a framework's matmul → softmax → matmul
// would use; that is also the "naive" baseline the 16-bit tolerance rule compares against.
// With no tiles there is nothing for a block mask to skip: a mask is checked on every entry
// of S, and those checks are what its sparsity counters report.

import { setUpExactRun } from '../run-setup.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import type { AttentionInputs } from '../../core/inputs.ts';
import { tileValues } from '../../trace/tracer.ts';
import type { Range } from '../../trace/events.ts';
import { blockCount, resolveBlocks } from '../blocks.ts';
import { accumulatePV, headSlice, maskTile, scoreTile } from '../tile-math.ts';
import type { AlgorithmResult, BlockOptions, RunOptions, StepAlgorithm, StepGenerator } from '../types.ts';
import { hasBlockMask } from '../tile-classes.ts';

/** Row blocks of the given (or memory-sized) height, each against the whole row of keys. */
export function standardBlocks(p: AttentionProblem, o: BlockOptions): { blockM: number; blockN: number } {
  return { blockM: resolveBlocks(p, o).blockM, blockN: p.nk };
}

function* runStandard(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const { blockM, sm, tr, eb, rounder } = setUpExactRun('standard', p, x, opts);
  const trace = opts.trace;
  const { nq, nk, d, dv } = p;
  const o = new Float32Array(p.batch * p.hq * nq * dv);
  const lseOut = new Float32Array(p.batch * p.hq * nq);
  const tRows = blockCount(nq, blockM);
  // "HBM": S and P of one head (reused across heads).
  const sHbm = new Float32Array(nq * nk);
  const pHbm = new Float32Array(nq * nk);
  const acc = new Float32Array(blockM * dv);
  const rowMax = new Float64Array(blockM);
  const rowSum = new Float64Array(blockM);
  const whole: Range = [0, nk];
  const masked = hasBlockMask(p);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hs = headSlice(p, b, h);
      const sink = p.sinks?.[h];
      const sinkRows = (rows: number) => (sink === undefined ? 0 : rows);
      const strip = (i: number) => {
        const r0 = i * blockM;
        const r1 = Math.min(nq, r0 + blockM);
        return { r0, rows: r1 - r0, tile: { qBlock: i, kvBlock: 0, rows: [r0, r1] as Range, cols: whole } };
      };
      const at = (pass: number, i: number, tile: ReturnType<typeof strip>['tile'], line: string, delta: object) => ({
        b,
        h,
        outer: pass,
        inner: i,
        tile,
        line,
        delta,
      });
      const noRows = { qBlock: -1, kvBlock: 0, rows: [0, 0] as Range, cols: whole };

      // Pass 1: S = Q K^T.
      let ev = tr.emit('load', at(1, -1, noRows, 'standard.loadK', { hbmRead: { K: nk * d * eb } }), () => ({ tensors: ['K' as const] }));
      if (ev) yield ev;
      for (let i = 0; i < tRows; i++) {
        const { r0, rows, tile } = strip(i);
        ev = tr.emit('load', at(1, i, tile, 'standard.loadQ', { hbmRead: { Q: rows * d * eb } }), () => ({ tensors: ['Q' as const] }));
        if (ev) yield ev;
        const sRows = sHbm.subarray(r0 * nk, (r0 + rows) * nk);
        const anyMasked = scoreTile(p, sm, x, hs, r0, rows, 0, nk, sRows, nk);
        // Every entry of the strip is checked against the mask; the mask step carries the count when it hides something.
        const checks = masked ? { sparsity: { maskEvals: rows * nk } } : {};
        const qkDelta = { matmulFlops: 2 * rows * nk * d, nonMatmulFlops: rows * nk };
        ev = tr.emit('qk', at(1, i, tile, 'standard.qk', anyMasked ? qkDelta : { ...qkDelta, ...checks }), () => ({
          s: tileValues(sRows, rows, nk, nk),
        }));
        if (ev) yield ev;
        if (anyMasked) {
          const bits = trace ? new Array<number>(rows * nk) : undefined;
          maskTile(p, sm, hs, r0, rows, 0, nk, sRows, nk, bits);
          ev = tr.emit('mask', at(1, i, tile, 'standard.mask', checks), () => ({ masked: bits ?? [], s: tileValues(sRows, rows, nk, nk) }));
          if (ev) yield ev;
        }
        ev = tr.emit('write', at(1, i, tile, 'standard.writeS', { hbmWritten: { S: rows * nk * 4 } }), () => ({ tensors: ['S' as const] }));
        if (ev) yield ev;
      }

      // Pass 2: P = softmax(S), row by row, with the max subtracted; a sink joins max and sum.
      for (let i = 0; i < tRows; i++) {
        const { r0, rows, tile } = strip(i);
        ev = tr.emit('load', at(2, i, tile, 'standard.loadS', { hbmRead: { S: rows * nk * 4 } }), () => ({ tensors: ['S' as const] }));
        if (ev) yield ev;
        const sRows = sHbm.subarray(r0 * nk, (r0 + rows) * nk);
        const pRows = pHbm.subarray(r0 * nk, (r0 + rows) * nk);
        const tileMax = trace ? new Array<number>(rows) : [];
        for (let r = 0; r < rows; r++) {
          let mx = -Infinity;
          const so = r * nk;
          for (let c = 0; c < nk; c++) if (sRows[so + c] > mx) mx = sRows[so + c];
          if (trace) tileMax[r] = mx;
          rowMax[r] = sink !== undefined && sink > mx ? sink : mx;
        }
        ev = tr.emit('rowmax', at(2, i, tile, 'standard.rowmax', { nonMatmulFlops: rows * nk + sinkRows(rows) }), () => ({
          tileMax,
          mBefore: new Array<number>(rows).fill(sink ?? -Infinity),
          mAfter: Array.from(rowMax.subarray(0, rows)),
        }));
        if (ev) yield ev;

        const sinkTerm = trace ? new Array<number>(rows) : [];
        for (let r = 0; r < rows; r++) {
          const mr = rowMax[r];
          const so = r * nk;
          let sum = 0;
          if (mr === -Infinity) pRows.fill(0, so, so + nk);
          else
            for (let c = 0; c < nk; c++) {
              pRows[so + c] = Math.exp(sRows[so + c] - mr);
              sum += pRows[so + c];
            }
          const st = sink === undefined || mr === -Infinity ? 0 : Math.exp(sink - mr);
          if (trace) sinkTerm[r] = st;
          rowSum[r] = sum + st;
        }
        ev = tr.emit(
          'exp',
          at(2, i, tile, 'standard.exp', { nonMatmulFlops: 2 * rows * nk + 2 * sinkRows(rows), expCount: rows * nk + sinkRows(rows) }),
          () => ({ p: tileValues(pRows, rows, nk, nk), m: Array.from(rowMax.subarray(0, rows)) }),
        );
        if (ev) yield ev;
        ev = tr.emit('rowsum', at(2, i, tile, 'standard.rowsum', { nonMatmulFlops: rows * nk + sinkRows(rows) }), () => ({
          tileSum: Array.from(rowSum.subarray(0, rows), (l, r) => l - sinkTerm[r]),
          lBefore: sinkTerm,
          lAfter: Array.from(rowSum.subarray(0, rows), Math.fround),
        }));
        if (ev) yield ev;

        const lse = trace ? new Array<number>(rows) : [];
        for (let r = 0; r < rows; r++) {
          const l = Math.fround(rowSum[r]);
          const inv = l > 0 ? 1 / l : 0;
          const so = r * nk;
          for (let c = 0; c < nk; c++) pRows[so + c] *= inv;
          const v = l > 0 ? rowMax[r] + Math.log(l) : -Infinity;
          lseOut[(b * p.hq + h) * nq + r0 + r] = v;
          if (trace) lse[r] = v;
        }
        if (rounder) for (let e = 0; e < rows * nk; e++) pRows[e] = rounder(pRows[e]);
        ev = tr.emit('normalize', at(2, i, tile, 'standard.normalize', { nonMatmulFlops: rows * nk + 3 * rows }), () => ({
          o: [],
          p: tileValues(pRows, rows, nk, nk),
          l: Array.from(rowSum.subarray(0, rows), Math.fround),
          lse,
        }));
        if (ev) yield ev;
        ev = tr.emit('write', at(2, i, tile, 'standard.writeP', { hbmWritten: { P: rows * nk * eb, LSE: rows * 4 } }), () => ({
          tensors: ['P' as const, 'LSE' as const],
        }));
        if (ev) yield ev;
      }

      // Pass 3: O = P V.
      ev = tr.emit('load', at(3, -1, noRows, 'standard.loadV', { hbmRead: { V: nk * dv * eb } }), () => ({ tensors: ['V' as const] }));
      if (ev) yield ev;
      for (let i = 0; i < tRows; i++) {
        const { r0, rows, tile } = strip(i);
        ev = tr.emit('load', at(3, i, tile, 'standard.loadP', { hbmRead: { P: rows * nk * eb } }), () => ({ tensors: ['P' as const] }));
        if (ev) yield ev;
        acc.fill(0);
        accumulatePV(p, x, hs, pHbm.subarray(r0 * nk), nk, rows, 0, nk, acc, dv);
        ev = tr.emit('pv', at(3, i, tile, 'standard.pv', { matmulFlops: 2 * rows * nk * dv }), () => ({
          o: tileValues(acc, rows, dv, dv),
        }));
        if (ev) yield ev;
        const oo = hs.oBase + r0 * dv;
        for (let e = 0; e < rows * dv; e++) o[oo + e] = rounder ? rounder(acc[e]) : acc[e];
        ev = tr.emit('write', at(3, i, tile, 'standard.writeO', { hbmWritten: { O: rows * dv * eb } }), () => ({
          tensors: ['O' as const],
        }));
        if (ev) yield ev;
      }
    }
  }
  const result: AlgorithmResult = { o, lse: lseOut, counters: tr.counters, blocks: { blockM, blockN: nk } };
  return result;
}

export const standard: StepAlgorithm = { id: 'standard', name: 'Standard attention (3 passes)', blocks: standardBlocks, run: runStandard };
