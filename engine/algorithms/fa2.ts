// FlashAttention-2 forward (Dao 2023, Algorithm 1). Outer loop over Q blocks, which are
// independent (that is what lets FA2 parallelize over sequence length); inner loop over
// K/V blocks with the running max m and sum l kept on chip, the output kept unnormalized
// and rescaled by exp(m_old - m_new), and a single division by l after the last block.
// The LSE m + log(l) is written for the backward pass.
//
// Seed note: the pseudo-code in seed 000 names rowmax(S_ij) "m_old" and then rescales by
// exp(m_old - m); the paper rescales by exp(m_prev - m_new) where m_prev is the running max
// before this block. We follow the paper (and the UI says so).

import { roundTo } from '../dtype.ts';
import { dtypeBytes, type AttentionProblem } from '../problem.ts';
import { kOffset, kvHead, oOffset, qOffset, vOffset, type AttentionInputs } from '../inputs.ts';
import { blockHasVisible, modifyScore, scoreModel, visible } from '../scores.ts';
import { Tracer, tileValues } from '../trace/tracer.ts';
import { blockCount, resolveBlocks } from './blocks.ts';
import type { AlgorithmResult, RunOptions, StepAlgorithm, StepGenerator } from './types.ts';

function* runFa2(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const { blockM, blockN } = resolveBlocks(p, opts);
  const sm = scoreModel(p);
  const tr = new Tracer(opts.trace);
  const eb = dtypeBytes(p.dtype);
  const o = new Float32Array(p.batch * p.hq * p.nq * p.dv);
  const lseOut = new Float32Array(p.batch * p.hq * p.nq);
  const tr_ = blockCount(p.nq, blockM);
  const tc = blockCount(p.nk, blockN);
  // On-chip buffers, sized for the largest tile and reused.
  const s = new Float32Array(blockM * blockN);
  const pt = new Float32Array(blockM * blockN);
  const acc = new Float32Array(blockM * p.dv);
  const m = new Float64Array(blockM);
  const l = new Float64Array(blockM);
  const factor = new Float64Array(blockM);

  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let i = 0; i < tr_; i++) {
        const r0 = i * blockM;
        const r1 = Math.min(p.nq, r0 + blockM);
        const rows = r1 - r0;
        const qTile = { qBlock: i, kvBlock: -1, rows: [r0, r1] as [number, number], cols: [0, 0] as [number, number] };
        const at = (inner: number, line: string, tile = qTile) => ({ b, h, outer: i, inner, tile, line });
        let ev = tr.emit('load', { ...at(-1, 'fa2.loadQ'), delta: { hbmRead: { Q: rows * p.d * eb } } }, () => ({ tensors: ['Q' as const] }));
        if (ev) yield ev;
        m.fill(-Infinity);
        l.fill(0);
        acc.fill(0);
        let first = true;
        for (let j = 0; j < tc; j++) {
          const c0 = j * blockN;
          const c1 = Math.min(p.nk, c0 + blockN);
          const cols = c1 - c0;
          // Blocks wholly above the causal diagonal or outside the window are never loaded.
          if (!blockHasVisible(sm, r0, r1, c0, c1, p.nk)) continue;
          const tile = { qBlock: i, kvBlock: j, rows: [r0, r1] as [number, number], cols: [c0, c1] as [number, number] };
          const here = (line: string) => at(j, line, tile);
          ev = tr.emit('load', { ...here('fa2.loadKV'), delta: { hbmRead: { K: cols * p.d * eb, V: cols * p.dv * eb } } }, () => ({
            tensors: ['K' as const, 'V' as const],
          }));
          if (ev) yield ev;

          // S = Q_i K_j^T with scale, softcap and ALiBi; masks come in their own phase.
          let anyMasked = false;
          for (let r = 0; r < rows; r++) {
            const qo = qOffset(p, b, h, r0 + r);
            for (let c = 0; c < cols; c++) {
              const ko = kOffset(p, b, hk, c0 + c);
              let dot = 0;
              for (let e = 0; e < p.d; e++) dot += x.q[qo + e] * x.k[ko + e];
              if (visible(sm, r0 + r, c0 + c)) s[r * blockN + c] = modifyScore(sm, h, r0 + r, c0 + c, dot);
              else {
                // Keep the unmasked logit until the mask phase so the view can show both.
                s[r * blockN + c] = modifyScore({ ...sm, causal: false, left: -1, right: -1 }, h, r0 + r, c0 + c, dot);
                anyMasked = true;
              }
            }
          }
          ev = tr.emit('qk', { ...here('fa2.qk'), delta: { matmulFlops: 2 * rows * cols * p.d, nonMatmulFlops: rows * cols } }, () => ({
            s: tileValues(s, rows, cols, blockN),
          }));
          if (ev) yield ev;
          if (anyMasked) {
            const maskBits = new Array<number>(opts.trace ? rows * cols : 0);
            for (let r = 0; r < rows; r++)
              for (let c = 0; c < cols; c++) {
                const hidden = !visible(sm, r0 + r, c0 + c);
                if (hidden) s[r * blockN + c] = -Infinity;
                if (opts.trace) maskBits[r * cols + c] = hidden ? 1 : 0;
              }
            ev = tr.emit('mask', { ...here('fa2.mask'), delta: {} }, () => ({ masked: maskBits, s: tileValues(s, rows, cols, blockN) }));
            if (ev) yield ev;
          }

          // m_new = max(m_old, rowmax(S)); the rescale factor exp(m_old - m_new) follows from it.
          const mBefore = opts.trace ? Array.from(m.subarray(0, rows)) : [];
          const tileMax = opts.trace ? new Array<number>(rows) : [];
          for (let r = 0; r < rows; r++) {
            let mx = -Infinity;
            for (let c = 0; c < cols; c++) if (s[r * blockN + c] > mx) mx = s[r * blockN + c];
            if (opts.trace) tileMax[r] = mx;
            const mNew = Math.max(m[r], mx);
            // Rows that have seen no visible key keep m = -inf; their factor is 1 (nothing to rescale).
            factor[r] = first || mNew === -Infinity ? 1 : Math.exp(m[r] - mNew);
            m[r] = mNew;
          }
          ev = tr.emit(
            'rowmax',
            { ...here('fa2.rowmax'), delta: { nonMatmulFlops: rows * cols + (first ? 0 : rows), expCount: first ? 0 : rows } },
            () => ({ tileMax, mBefore, mAfter: Array.from(m.subarray(0, rows)) }),
          );
          if (ev) yield ev;

          // P = exp(S - m_new). l sums the fp32 values; P·V uses P rounded to the input dtype.
          const tileSum = new Float64Array(rows);
          for (let r = 0; r < rows; r++) {
            const mr = m[r];
            let sum = 0;
            for (let c = 0; c < cols; c++) {
              const v = mr === -Infinity ? 0 : Math.exp(s[r * blockN + c] - mr);
              sum += v;
              pt[r * blockN + c] = roundTo(p.dtype, v);
            }
            tileSum[r] = sum;
          }
          ev = tr.emit('exp', { ...here('fa2.exp'), delta: { nonMatmulFlops: 2 * rows * cols, expCount: rows * cols } }, () => ({
            p: tileValues(pt, rows, cols, blockN),
            m: Array.from(m.subarray(0, rows)),
          }));
          if (ev) yield ev;

          const lBefore = opts.trace ? Array.from(l.subarray(0, rows)) : [];
          for (let r = 0; r < rows; r++) l[r] = Math.fround(factor[r] * l[r] + tileSum[r]);
          ev = tr.emit('rowsum', { ...here('fa2.rowsum'), delta: { nonMatmulFlops: rows * cols + 2 * rows } }, () => ({
            tileSum: Array.from(tileSum),
            lBefore,
            lAfter: Array.from(l.subarray(0, rows)),
          }));
          if (ev) yield ev;

          if (!first) {
            for (let r = 0; r < rows; r++) {
              const f = factor[r];
              for (let e = 0; e < p.dv; e++) acc[r * p.dv + e] *= f;
            }
            ev = tr.emit(
              'rescale',
              { ...here('fa2.rescale'), delta: { nonMatmulFlops: rows * p.dv, rescaleCount: rows } },
              () => {
                const mNew = Array.from(m.subarray(0, rows));
                const f = Array.from(factor.subarray(0, rows));
                // m_old recovered from the factor: m_old = m_new + log(factor).
                return { factor: f, mNew, mOld: mNew.map((mn, r) => (f[r] === 1 ? mBefore[r] : mn + Math.log(f[r]))) };
              },
            );
            if (ev) yield ev;
          }

          // O += P V_j
          for (let r = 0; r < rows; r++) {
            for (let c = 0; c < cols; c++) {
              const w = pt[r * blockN + c];
              if (w === 0) continue;
              const vo = vOffset(p, b, hk, c0 + c);
              const ao = r * p.dv;
              for (let e = 0; e < p.dv; e++) acc[ao + e] += w * x.v[vo + e];
            }
          }
          ev = tr.emit('pv', { ...here('fa2.pv'), delta: { matmulFlops: 2 * rows * cols * p.dv } }, () => ({
            o: tileValues(acc, rows, p.dv, p.dv),
          }));
          if (ev) yield ev;
          first = false;
        }

        // O_i = O / l once; LSE = m + log(l). A sink joins the denominator here.
        const sink = p.sinks?.[h];
        const lseRow = new Array<number>(rows);
        const lFinal = new Array<number>(rows);
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
          const oo = oOffset(p, b, h, r0 + r);
          for (let e = 0; e < p.dv; e++) {
            const v = acc[r * p.dv + e] * inv;
            acc[r * p.dv + e] = v;
            o[oo + e] = roundTo(p.dtype, v);
          }
          lFinal[r] = lr;
          lseRow[r] = lr > 0 ? mr + Math.log(lr) : -Infinity;
          lseOut[(b * p.hq + h) * p.nq + r0 + r] = lseRow[r];
        }
        ev = tr.emit(
          'normalize',
          { ...at(-1, 'fa2.normalize'), delta: { nonMatmulFlops: rows * p.dv + rows } },
          () => ({ o: tileValues(acc, rows, p.dv, p.dv), l: lFinal, lse: lseRow }),
        );
        if (ev) yield ev;
        ev = tr.emit(
          'write',
          { ...at(-1, 'fa2.write'), delta: { hbmWritten: { O: rows * p.dv * eb, LSE: rows * 4 } } },
          () => ({ tensors: ['O' as const, 'LSE' as const] }),
        );
        if (ev) yield ev;
      }
    }
  }
  const result: AlgorithmResult = { o, lse: lseOut, counters: tr.counters, blocks: { blockM, blockN } };
  return result;
}

export const fa2: StepAlgorithm = { id: 'fa2', name: 'FlashAttention-2', run: runFa2 };
