import { describe, expect, it } from 'vitest';
import { randomInputs } from '../../core/inputs.ts';
import { ProblemError, type AttentionProblem } from '../../core/problem.ts';
import { runToEnd } from '../../run.ts';
import type { TraceEvent } from '../../trace/events.ts';
import { accuracyMatrix } from '../accuracy-matrix.ts';
import { fa3, fa3DefaultTile } from './forward.ts';

const base: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 128, nk: 128, d: 64, dv: 64, causal: false, dtype: 'fp16' };

function trace(p: AttentionProblem, features: Record<string, boolean>, blockN = 32): TraceEvent[] {
  const x = randomInputs(p, { seed: 5 });
  const evs: TraceEvent[] = [];
  runToEnd(fa3, p, x, { trace: true, blockM: 128, blockN, features, onEvent: (e) => evs.push(e) });
  return evs;
}
const idx = (evs: TraceEvent[], pred: (e: TraceEvent) => boolean) => evs.findIndex(pred);

describe('fa3 against the float64 reference', () => {
  accuracyMatrix(fa3, { dims: [64, 128, 256] });
  // fp32 with these switches and random tiles is covered by hw-algorithms.property.test.ts.
  describe('with intraOverlap and pingpong off, small tiles', () => {
    accuracyMatrix(fa3, {
      dims: [64],
      dtypes: ['bf16'],
      options: { blockM: 64, blockN: 32, features: { intraOverlap: false, pingpong: false } },
    });
  });
});

describe('fa3 schedule', () => {
  it('with intraOverlap, S_next = Q·K_j is issued before O += P·V_{j-1}, and the softmax of S_next after it', () => {
    const evs = trace(base, { pingpong: false }).filter((e) => e.warpgroup === undefined || e.warpgroup === 0);
    // Blocks go last to first: 3, 2, 1, 0.
    const qk2 = idx(evs, (e) => e.kind === 'qk' && e.inner === 2);
    const pv3 = idx(evs, (e) => e.kind === 'pv' && e.inner === 3);
    const max2 = idx(evs, (e) => e.kind === 'rowmax' && e.inner === 2);
    const rescale2 = idx(evs, (e) => e.kind === 'rescale' && e.inner === 2);
    expect(qk2).toBeGreaterThan(-1);
    expect(qk2).toBeLessThan(pv3);
    expect(pv3).toBeLessThan(max2);
    expect(max2).toBeLessThan(rescale2);
    expect(evs.filter((e) => e.kind === 'qk').map((e) => e.inner)).toEqual([3, 2, 1, 0]);
  });
  it('without intraOverlap each block finishes its softmax before its own P·V', () => {
    const evs = trace(base, { pingpong: false, intraOverlap: false }).filter((e) => e.warpgroup === undefined || e.warpgroup === 0);
    const kinds = evs.filter((e) => e.inner === 2 && !['load'].includes(e.kind)).map((e) => e.kind);
    expect(kinds).toEqual(['qk', 'rowmax', 'exp', 'rowsum', 'rescale', 'pv']);
    expect(idx(evs, (e) => e.kind === 'pv' && e.inner === 3)).toBeLessThan(idx(evs, (e) => e.kind === 'qk' && e.inner === 2));
  });
  it('pingpong interleaves the two warpgroups (64 rows each) round-robin', () => {
    const evs = trace(base, {});
    const wgs = evs.filter((e) => e.kind === 'qk').map((e) => e.warpgroup);
    expect(wgs).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
    const q0 = evs.find((e) => e.kind === 'qk' && e.warpgroup === 0)!;
    const q1 = evs.find((e) => e.kind === 'qk' && e.warpgroup === 1)!;
    expect(q0.tile.rows).toEqual([0, 64]);
    expect(q1.tile.rows).toEqual([64, 128]);
    // WG1's GEMMs for block 3 come before WG0's softmax of it ends; WG0's next GEMMs follow its softmax.
    const seq = evs
      .filter((e) => e.kind !== 'load')
      .slice(0, 6)
      .map((e) => `${e.kind}${e.warpgroup}`);
    expect(seq).toEqual(['qk0', 'qk1', 'rowmax0', 'exp0', 'rowsum0', 'qk0']);
  });
  it('with the scheduler barrier off (16-bit d 256, FP8 d 64) the warpgroups run side by side: each phase for every warpgroup before the next', () => {
    // Consumer phases in order, as "<kind><warpgroup>" for one K/V block, with consecutive repeats of a kind folded.
    const phases = (p: AttentionProblem, features: Record<string, boolean> = {}) => {
      const x = randomInputs(p, { seed: 3 });
      const evs: TraceEvent[] = [];
      const r = runToEnd(fa3, p, x, { trace: true, features, onEvent: (e) => evs.push(e) });
      const j = evs.find((e) => e.kind === 'qk')!.inner - 1;
      return { r, seq: evs.filter((e) => e.inner === j && e.kind !== 'load').map((e) => `${e.kind}${e.warpgroup}`) };
    };
    const sideBySide = 'qk0 qk1 rowmax0 exp0 rowsum0 rescale0 rowmax1 exp1 rowsum1 rescale1 pv0 pv1'.split(' ');
    const d256 = phases({ ...base, nq: 128, nk: 320, d: 256, dv: 256 }); // 128×80: 2 warpgroups, 4 blocks
    expect(d256.seq).toEqual(sideBySide);
    expect(d256.r.schedule).toMatch(
      /no scheduler barrier for 16-bit inputs at d > 128 \(UseSchedulerBarrier, hopper\/mainloop_fwd_sm90_tma_gmma_ws\.hpp@0251105a\)/,
    );
    const fp8 = phases({ ...base, nq: 192, nk: 480, dtype: 'fp8e4m3' }); // 192×160: 3 warpgroups, 3 blocks
    expect(fp8.seq.filter((s) => s.startsWith('rowmax') || s.startsWith('qk'))).toEqual([
      'qk0',
      'qk1',
      'qk2',
      'rowmax0',
      'rowmax1',
      'rowmax2',
    ]);
    expect(fp8.r.schedule).toMatch(/for FP8 at d < 128/);
    // The kernel's barrier at 16-bit d 128: round-robin, WG0's next GEMMs right after its own softmax.
    const d128 = phases({ ...base, nq: 128, nk: 528, d: 128, dv: 128 }); // 128×176: 2 warpgroups, 3 blocks
    expect(d128.seq).toEqual('qk0 qk1 rowmax0 exp0 rowsum0 rescale0 pv0 rowmax1 exp1 rowsum1 rescale1 pv1'.split(' '));
    expect(d128.r.schedule).toMatch(/^Ping-pong: a scheduler barrier hands the tensor cores to the 2 consumer warpgroups in turn/);
    // Switched off at d 128: side by side as at d 256.
    const off = phases({ ...base, nq: 128, nk: 528, d: 128, dv: 128 }, { pingpong: false });
    expect(off.seq).toEqual(sideBySide);
    expect(off.r.schedule).toMatch(/^Ping-pong switched off/);
    // The ping-pong switch cannot add a barrier the kernel lacks, and the numbers never move.
    const forced = phases({ ...base, nq: 128, nk: 320, d: 256, dv: 256 }, { pingpong: true });
    expect(forced.seq).toEqual(d256.seq);
    expect(Array.from(off.r.o)).toEqual(Array.from(d128.r.o));
  });
  it('the producer runs ahead by at most two K stages', () => {
    const evs = trace(base, { pingpong: false }, 16); // 8 blocks
    let kLoaded = 0;
    let kUsed = 0;
    for (const e of evs) {
      if (e.kind === 'load' && e.line === 'fa3.loadK') kLoaded++;
      // A stage is free once the last warpgroup has read it.
      if (e.kind === 'qk' && e.warpgroup === 1) kUsed++;
      expect(kLoaded - kUsed).toBeLessThanOrEqual(2);
    }
    expect(kLoaded).toBe(8);
  });
  it('pingpong and overlap change the order of the events, not the numbers', () => {
    const p = { ...base, nq: 200, nk: 300, causal: true };
    const x = randomInputs(p, { seed: 9 });
    const a = runToEnd(fa3, p, x, { features: { pingpong: false, intraOverlap: false } });
    const b = runToEnd(fa3, p, x, {});
    expect(Array.from(b.o)).toEqual(Array.from(a.o));
  });
  it('default tiles follow the kernel table', () => {
    expect(fa3DefaultTile({ ...base, d: 128, dv: 128 })).toEqual({ blockM: 128, blockN: 176 });
    expect(fa3DefaultTile({ ...base, d: 128, dv: 128, causal: true })).toEqual({ blockM: 128, blockN: 128 });
    expect(fa3DefaultTile({ ...base, d: 64 })).toEqual({ blockM: 192, blockN: 192 });
    expect(fa3DefaultTile({ ...base, d: 256, dv: 256 })).toEqual({ blockM: 128, blockN: 80 });
    const x = randomInputs(base, { seed: 1 });
    expect(runToEnd(fa3, { ...base, d: 64 }, x).blocks).toEqual({ blockM: 192, blockN: 192 });
  });
  it('rejects unknown features by name and lists the accepted ones', () => {
    const x = randomInputs(base, { seed: 1 });
    expect(() => runToEnd(fa3, base, x, { features: { pingPong: true } })).toThrow(
      /unknown feature 'pingPong' for fa3; accepted: intraOverlap, pingpong/,
    );
    expect(() => runToEnd(fa3, base, x, { features: { pingpong: 1 } })).toThrow(ProblemError);
  });
});

describe('fa3 counters', () => {
  it('match the closed form (non-causal, pingpong off) and tracing does not change them', () => {
    const p: AttentionProblem = { batch: 2, hq: 3, hk: 1, nq: 100, nk: 150, d: 32, dv: 24, causal: false, dtype: 'bf16' };
    const bm = 48;
    const bn = 40;
    const x = randomInputs(p, { seed: 2 });
    const r = runToEnd(fa3, p, x, { blockM: bm, blockN: bn, features: { pingpong: false } });
    const BH = p.batch * p.hq;
    const tr = Math.ceil(p.nq / bm);
    const tc = Math.ceil(p.nk / bn);
    const eb = 2;
    const c = r.counters;
    expect(c.hbmRead).toEqual({ Q: BH * p.nq * p.d * eb, K: BH * tr * p.nk * p.d * eb, V: BH * tr * p.nk * p.dv * eb });
    expect(c.hbmWritten).toEqual({ O: BH * p.nq * p.dv * eb, LSE: BH * p.nq * 4 });
    expect(c.matmulFlops).toBe(2 * BH * p.nq * p.nk * (p.d + p.dv));
    expect(c.expCount).toBe(BH * (p.nq * p.nk + p.nq * (tc - 1)));
    expect(c.rescaleCount).toBe(BH * p.nq * (tc - 1));
    // qk: scale; rowmax: compare + merge, and subtract + exp of the factor after the first block;
    // exp: 2 per element; rowsum: add per element + 2 per row; rescale: dv per row; normalize: dv + 3 per row.
    const nonMatmul =
      BH * (5 * p.nq * p.nk + p.nq * tc + 2 * p.nq * (tc - 1) + 2 * p.nq * tc + p.nq * p.dv * (tc - 1) + p.nq * p.dv + 3 * p.nq);
    expect(c.nonMatmulFlops).toBe(nonMatmul);
    // Per tile: load Q, load K and V per block, qk/rowmax/exp/rowsum/pv per block, a rescale per block after the first, normalize, write.
    expect(c.steps).toBe(BH * tr * (1 + 2 * tc + 5 * tc + (tc - 1) + 2));
    expect(runToEnd(fa3, p, x, { blockM: bm, blockN: bn, features: { pingpong: false }, trace: true }).counters).toEqual(c);
    // Pingpong splits each tile into 64-row warpgroups: same work, more (per-warpgroup) steps.
    const pp = runToEnd(fa3, p, x, { blockM: 128, blockN: bn });
    expect(pp.counters.matmulFlops).toBe(c.matmulFlops);
    const tiles = Math.ceil(p.nq / 128);
    const units = Math.ceil(p.nq / 64); // 100 rows: one full and one partial warpgroup
    expect(pp.counters.steps).toBe(BH * (tiles * (1 + 2 * tc + 1) + units * (6 * tc - 1 + 1)));
  });
});
