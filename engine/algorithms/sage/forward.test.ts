// SageAttention (sage.ts) against this file's own float64 attention and its own reading of
// the quantization: the scores of a qk step are the exact integer sums of INT8 code products
// times the event's scales; O stays within a bound derived from the INT8 step; K smoothing
// pays off where K has a large per-channel mean; v2's e4m3 P flushes what it must; and what
// the kernels do not have is refused by name.

import { describe, expect, it } from 'vitest';
import { roundFp16 } from '../../core/dtype.ts';
import { kvHead, randomInputs, type AttentionInputs } from '../../core/inputs.ts';
import { mulberry32 } from '../../core/random.ts';
import type { AttentionProblem } from '../../core/problem.ts';
import { runToEnd } from '../../run.ts';
import type { TraceEvent } from '../../trace/events.ts';
import { SAGE_P_SCALE, sage } from './forward.ts';

type Ev<K extends TraceEvent['kind']> = Extract<TraceEvent, { kind: K }>;

/** Dense float64 attention, BHND, GQA by head groups, causal aligned bottom-right. */
function reference(p: AttentionProblem, x: AttentionInputs): Float64Array {
  const o = new Float64Array(p.batch * p.hq * p.nq * p.dv);
  const scale = p.scale ?? 1 / Math.sqrt(p.d);
  for (let b = 0; b < p.batch; b++)
    for (let h = 0; h < p.hq; h++) {
      const hk = kvHead(p, h);
      for (let i = 0; i < p.nq; i++) {
        const s: number[] = [];
        for (let j = 0; j < p.nk; j++) {
          if (p.causal && j > i + p.nk - p.nq) {
            s.push(-Infinity);
            continue;
          }
          let dot = 0;
          for (let e = 0; e < p.d; e++) dot += x.q[((b * p.hq + h) * p.nq + i) * p.d + e] * x.k[((b * p.hk + hk) * p.nk + j) * p.d + e];
          s.push(dot * scale);
        }
        const m = Math.max(...s);
        const w = s.map((v) => Math.exp(v - m));
        const l = w.reduce((a, c) => a + c, 0);
        for (let e = 0; e < p.dv; e++) {
          let acc = 0;
          for (let j = 0; j < p.nk; j++) acc += w[j] * x.v[((b * p.hk + hk) * p.nk + j) * p.dv + e];
          o[((b * p.hq + h) * p.nq + i) * p.dv + e] = acc / l;
        }
      }
    }
  return o;
}

const rmse = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  return Math.sqrt(s / a.length);
};

function trace(p: AttentionProblem, x: AttentionInputs, features: Record<string, boolean | number>, blocks = { blockM: 32, blockN: 16 }) {
  const evs: TraceEvent[] = [];
  const r = runToEnd(sage, p, x, { ...blocks, features, trace: true, onEvent: (e) => evs.push(e) });
  return { r, evs };
}

/** K rows with a common offset per channel (what SageAttention's smoothing is for): N(0,1) + offset[e]. */
function biasedK(p: AttentionProblem, x: AttentionInputs, seed: number, size: number): AttentionInputs {
  const rnd = mulberry32(seed);
  const offset = Array.from({ length: p.d }, () => size * (rnd() * 2 - 1));
  const k = Float32Array.from(x.k, (v, i) => roundFp16(v + offset[i % p.d]));
  return { ...x, k };
}

const P: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 64, nk: 80, d: 32, dv: 32, causal: true, dtype: 'fp16' };

describe('sage: the integer Q·Kᵀ of a step', () => {
  for (const smoothK of [false, true]) {
    it(`smoothK=${smoothK}: every S entry is Σ codes·codes times the event's scales, exactly (v1 and v2)`, () => {
      const x = biasedK(P, randomInputs(P, { seed: 4 }), 9, 3);
      const scale = 1 / Math.sqrt(P.d);
      for (const version of [1, 2]) {
        const { evs } = trace(P, x, { version, smoothK });
        // This file's own K mean: over all tokens of the (batch, kv head), stored in fp16 like torch's mean of an fp16 tensor.
        const km = new Float64Array(P.d);
        if (smoothK)
          for (let e = 0; e < P.d; e++) {
            let s = 0;
            for (let j = 0; j < P.nk; j++) s += x.k[j * P.d + e];
            km[e] = roundFp16(s / P.nk);
          }
        // v1 quantizes Q·(scale·log2 e) (fp32), v2 Q as it is.
        const qf = version === 1 ? Math.fround(Math.fround(scale) * Math.fround(Math.LOG2E)) : 1;
        const qv = (h: number, i: number, e: number) => Math.fround(x.q[(h * P.nq + i) * P.d + e] * qf);
        const kv = (j: number, e: number) => Math.fround(x.k[j * P.d + e] - km[e]);
        // The kernels' rounding of the fp32 quotient: v1 adds ±0.5 in fp32 and truncates; v2 rounds to nearest even.
        const code = (v: number, s: number) => {
          const r = Math.fround(v / s);
          if (version === 1) return Math.trunc(Math.fround(r + Math.sign(r) * 0.5));
          const f = Math.floor(r);
          return r - f > 0.5 || (r - f === 0.5 && f % 2 !== 0) ? f + 1 : f;
        };
        const qks = evs.filter((e): e is Ev<'qk'> => e.kind === 'qk');
        expect(qks.length).toBeGreaterThan(10);
        let checked = 0;
        for (const ev of qks) {
          const [r0, r1] = ev.tile.rows;
          const [c0, c1] = ev.tile.cols;
          // The scales are max|x| / 127 of the unit's rows and the block's keys.
          let qa = 0;
          for (let i = r0; i < r1; i++) for (let e = 0; e < P.d; e++) qa = Math.max(qa, Math.abs(qv(ev.h, i, e)));
          let ka = 0;
          for (let j = c0; j < c1; j++) for (let e = 0; e < P.d; e++) ka = Math.max(ka, Math.abs(kv(j, e)));
          expect(ev.qScale).toBe(Math.fround(qa / 127));
          expect(ev.kScale).toBe(Math.fround(ka / 127));
          const qs = ev.qScale!;
          const ks = ev.kScale!;
          const cols = c1 - c0;
          for (let r = 0; r < r1 - r0; r++)
            for (let c = 0; c < cols; c++) {
              let dot = 0;
              for (let e = 0; e < P.d; e++) dot += code(qv(ev.h, r0 + r, e), qs) * code(kv(c0 + c, e), ks);
              expect(Number.isInteger(dot)).toBe(true);
              const want =
                version === 1
                  ? Math.fround(Math.fround(dot * qs) * ks)
                  : Math.fround(dot * Math.fround(Math.fround(Math.fround(scale) * Math.fround(Math.LOG2E)) * Math.fround(qs * ks)));
              expect(ev.s[r * cols + c]).toBe(want);
              checked++;
            }
        }
        expect(checked).toBeGreaterThan(1000);
      }
    });

    it(`smoothK=${smoothK}: O is within the bound the INT8 steps imply (v1)`, () => {
      const x = biasedK(P, randomInputs(P, { seed: 5 }), 10, 3);
      const { r, evs } = trace(P, x, { version: 1, smoothK });
      const ref = reference(P, x);
      const vmax = Math.max(...Array.from(x.v, Math.abs));
      // Per query row: the largest logit error rounding to the codes can make, in natural units.
      // |Δ(q·k)| ≤ Σ_e |q_e|·δk/2 + |k_e|·δq/2 + δq·δk/4, with δ the INT8 steps of the row's Q unit and the key's block.
      const scale = 1 / Math.sqrt(P.d);
      const qf = Math.fround(scale) * Math.LOG2E;
      const km = new Float64Array(P.d);
      if (smoothK)
        for (let e = 0; e < P.d; e++) {
          let s = 0;
          for (let j = 0; j < P.nk; j++) s += x.k[j * P.d + e];
          km[e] = roundFp16(s / P.nk);
        }
      const qks = evs.filter((e): e is Ev<'qk'> => e.kind === 'qk');
      let worst = 0;
      for (let h = 0; h < P.hq; h++)
        for (let i = 0; i < P.nq; i++) {
          let eps = 0;
          for (const ev of qks.filter((e) => e.h === h && i >= e.tile.rows[0] && i < e.tile.rows[1])) {
            const dq = ev.qScale! / qf; // Q's step in Q's own units
            const dk = ev.kScale!;
            for (let j = ev.tile.cols[0]; j < ev.tile.cols[1]; j++) {
              let b = 0;
              for (let e = 0; e < P.d; e++) {
                b += (Math.abs(x.q[(h * P.nq + i) * P.d + e]) * dk) / 2 + (Math.abs(x.k[j * P.d + e] - km[e]) * dq) / 2 + (dq * dk) / 4;
              }
              eps = Math.max(eps, b * scale);
            }
          }
          // Softmax weights move by at most e^{±2ε} relative; P in fp16, 4 fp16 roundings of the
          // block partial (16-key chunks of a 64-key block, at most 4 blocks' worth in all here), O stored in fp16.
          const u = 2 ** -11;
          const bound = (Math.exp(2 * eps) - 1) * vmax + 8 * u * vmax;
          for (let e = 0; e < P.dv; e++) {
            const idx = (h * P.nq + i) * P.dv + e;
            const err = Math.abs(r.o[idx] - ref[idx]);
            expect(err).toBeLessThanOrEqual(bound);
            worst = Math.max(worst, err / bound);
          }
        }
      // Not vacuous: the bound is worst-case (d rounding errors all of one sign), typical errors add like √d,
      // so the largest error sits one to two orders below it — but not further.
      expect(worst).toBeGreaterThan(2e-3);
    });
  }
});

describe('sage v2: Q scales per warp', () => {
  it('steps each 32-row warp slice of a 64-row tile as its own unit, with the max of its own rows; qPerWarp=false gives one unit', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 128, nk: 64, d: 16, dv: 16, causal: false, dtype: 'fp16' };
    const x0 = randomInputs(p, { seed: 6 });
    // Row 5 ten times larger: its warp's step grows, the other warp's does not.
    const x = { ...x0, q: Float32Array.from(x0.q, (v, i) => (Math.floor(i / p.d) === 5 ? roundFp16(v * 10) : v)) };
    const warp = trace(p, x, { version: 2 }, { blockM: 64, blockN: 32 }).evs.filter((e): e is Ev<'qk'> => e.kind === 'qk');
    const tile = trace(p, x, { version: 2, qPerWarp: false }, { blockM: 64, blockN: 32 }).evs.filter((e): e is Ev<'qk'> => e.kind === 'qk');
    const amax = (r0: number, r1: number) => {
      let a = 0;
      for (let i = r0 * p.d; i < r1 * p.d; i++) a = Math.max(a, Math.abs(x.q[i]));
      return Math.fround(a / 127);
    };
    expect(warp.map((e) => [e.tile.rows[0], e.warp])).toEqual([
      [0, 0],
      [32, 1],
      [0, 0],
      [32, 1],
      [64, 0],
      [96, 1],
      [64, 0],
      [96, 1],
    ]);
    for (const e of warp) expect(e.qScale).toBe(amax(e.tile.rows[0], e.tile.rows[1]));
    expect(warp[0].qScale! / warp[1].qScale!).toBeGreaterThan(3);
    expect(tile.map((e) => e.tile.rows)).toEqual([
      [0, 64],
      [0, 64],
      [64, 128],
      [64, 128],
    ]);
    expect(tile.every((e) => e.warp === undefined)).toBe(true);
    expect(tile[0].qScale).toBe(amax(0, 64));
  });
});

describe('sage: K smoothing', () => {
  it('cuts the RMSE of O against float64 by a large factor when K has a large per-channel mean (v1 and v2)', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 128, nk: 256, d: 64, dv: 64, causal: false, dtype: 'fp16' };
    // Channel offsets uniform in ±60 against unit noise: unsmoothed, K's INT8 step is set by the offsets.
    const x = biasedK(p, randomInputs(p, { seed: 7 }), 12, 60);
    const ref = reference(p, x);
    for (const version of [1, 2]) {
      const on = rmse(runToEnd(sage, p, x, { features: { version, smoothK: true } }).o, ref);
      const off = rmse(runToEnd(sage, p, x, { features: { version, smoothK: false } }).o, ref);
      // Measured (seed 7): v1 10.5×, v2 3.8× (v2's e4m3 P·V error stays when the logits are fixed).
      expect(off / on, `v${version}: off ${off}, on ${on}`).toBeGreaterThan(version === 1 ? 8 : 3);
    }
  });
});

describe('sage v2: the e4m3 cast of P', () => {
  it('lists the P values it flushes in the trace, and they are exactly those below half of e4m3’s smallest subnormal after scaling', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 32, nk: 64, d: 16, dv: 16, causal: false, dtype: 'fp16' };
    const x0 = randomInputs(p, { seed: 8 });
    // Large logits: spreads of 30+ in log2 units in each row.
    const x = { ...x0, q: Float32Array.from(x0.q, (v) => roundFp16(v * 6)) };
    const { r, evs } = trace(p, x, { version: 2 });
    const exps = evs.filter((e): e is Ev<'exp'> => e.kind === 'exp');
    const qks = evs.filter((e): e is Ev<'qk'> => e.kind === 'qk');
    let flushed = 0;
    for (const [n, ev] of exps.entries()) {
      expect(ev.pScale).toBe(SAGE_P_SCALE);
      const s = qks[n].s;
      const cols = ev.tile.cols[1] - ev.tile.cols[0];
      const listed = new Set(ev.flushed);
      for (let k = 0; k < s.length; k++) {
        const row = Math.floor(k / cols);
        const pf = 2 ** (s[k] - ev.m[row]); // fp32 P before the cast, as this file reads it
        // 2⁻¹⁰ is half of e4m3's smallest subnormal 2⁻⁹: at or below it the cast gives 0.
        const scaled = Math.fround(Math.fround(pf) * SAGE_P_SCALE);
        if (scaled < 2 ** -10 * 0.999) expect(listed.has(k), `entry ${k} (P·scale ${scaled})`).toBe(true);
        if (scaled > 2 ** -10 * 1.001) expect(listed.has(k), `entry ${k} (P·scale ${scaled})`).toBe(false);
        if (listed.has(k)) expect(ev.p[k]).toBe(0);
      }
      flushed += listed.size;
    }
    expect(flushed).toBeGreaterThan(20);
    expect(r.stats?.flushedP).toBe(flushed);
  });

  it('reads V in e4m3 with one scale per channel (max over the tokens / 448), shown on pv', () => {
    const p: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 16, nk: 48, d: 8, dv: 8, causal: false, dtype: 'bf16' };
    const x = randomInputs(p, { seed: 2 });
    const { evs } = trace(p, x, { version: 2 }, { blockM: 16, blockN: 16 });
    const pv = evs.find((e): e is Ev<'pv'> => e.kind === 'pv')!;
    for (let e = 0; e < p.dv; e++) {
      let amax = 0;
      for (let j = 0; j < p.nk; j++) amax = Math.max(amax, Math.abs(x.v[j * p.dv + e]));
      expect(pv.vScales![e]).toBe(Math.fround(amax / 448));
    }
  });
});

describe('sage: refusals', () => {
  const run =
    (p: Partial<AttentionProblem>, features: Record<string, boolean | number> = {}) =>
    () => {
      const problem = { ...P, ...p };
      return runToEnd(sage, problem, randomInputs(problem, { seed: 1 }), { features });
    };
  it('names the option it does not take', () => {
    expect(run({ dtype: 'fp8e4m3' })).toThrow(/^dtype: sage quantizes its own inputs.*fp8e4m3 is not one of them/);
    expect(run({ alibi: 'standard' })).toThrow(/^alibi: SageAttention has no ALiBi/);
    expect(run({ softcap: 10 })).toThrow(/^softcap: SageAttention has no softcap/);
    expect(run({ sinks: [0, 1] })).toThrow(/^sinks: SageAttention has no attention-sink logits/);
    expect(run({ dv: 16 })).toThrow(/^dv: SageAttention's kernels take one head dim/);
    expect(run({}, { version: 3 })).toThrow(/^features\.version: must be 1 .* or 2/);
    expect(run({}, { version: 1, qPerWarp: false })).toThrow(/^features\.qPerWarp: applies to version 2 only/);
    expect(run({}, { blockQuant: true })).toThrow(/unknown feature 'blockQuant' for sage; accepted: version, smoothK, qPerWarp/);
  });
});
