// An algorithm defined entirely in this file — FA2's arithmetic (O kept unnormalized, one
// division at the end) in FA1's loop order (K/V blocks outside, Q blocks inside, the row
// statistics of every query row kept across the outer loop) — registered at run time and
// driven through everything that looks algorithms up by id: `run`, the debugger session,
// compare and the problem panel's switch list. No other file names it.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockCount, resolveBlocks } from '../../engine/algorithms/blocks.ts';
import { defineAlgorithm } from '../../engine/algorithms/descriptor.ts';
import {
  BUILT_IN_ALGORITHMS,
  DESCRIPTORS,
  algorithmById,
  descriptorOf,
  isBuiltIn,
  registerAlgorithm,
  unregisterAlgorithm,
} from '../../engine/algorithms/registry.ts';
import { readFeatures, type FeatureSpecs } from '../../engine/algorithms/features.ts';
import { setUpExactRun } from '../../engine/algorithms/run-setup.ts';
import { accumulatePV, headSlice, maskTile, roundTile, scoreTile } from '../../engine/algorithms/tile-math.ts';
import type { AlgorithmResult, RunOptions, StepGenerator } from '../../engine/algorithms/types.ts';
import { randomInputs, type AttentionInputs } from '../../engine/core/inputs.ts';
import { ProblemError, type AttentionProblem } from '../../engine/core/problem.ts';
import { referenceAttention } from '../../engine/core/reference.ts';
import { blockHasVisible } from '../../engine/core/scores.ts';
import type { LoadRequest } from '../../engine/request.ts';
import { DebuggerSession } from '../../engine/debugger/session.ts';
import { runToEnd } from '../../engine/run.ts';
import type { Range, TraceEvent } from '../../engine/trace/events.ts';
import { tileValues } from '../../engine/trace/tracer.ts';
import { DEFAULT_FORM, formToRequest, panelSwitches, panelSwitchTitle } from './problem-form.ts';

const ID = 'fa2-kv-outer';
const fa2 = BUILT_IN_ALGORITHMS.fa2;

const SWITCHES = {
  kvOuter: {
    default: true,
    panel: true,
    label: 'K/V outer',
    doc: 'K/V blocks in the outer loop, as FA1 orders them; off: FA2’s own order',
  },
} satisfies FeatureSpecs;

function* runKvOuter(p: AttentionProblem, x: AttentionInputs, opts: RunOptions): StepGenerator {
  const f = readFeatures(ID, SWITCHES, opts.features);
  if (!f.kvOuter) return yield* fa2.forward.run(p, x, { ...opts, features: undefined });
  if (p.sinks) throw new ProblemError('sinks', `${ID} has no attention sinks`);
  const { blockM, blockN, sm, tr, eb, rounder } = setUpExactRun(ID, p, x, { ...opts, features: undefined });
  const dv = p.dv;
  const o = new Float32Array(p.batch * p.hq * p.nq * dv);
  const lse = new Float32Array(p.batch * p.hq * p.nq);
  const s = new Float32Array(blockM * blockN);
  const pt = new Float32Array(blockM * blockN);
  for (let b = 0; b < p.batch; b++) {
    for (let h = 0; h < p.hq; h++) {
      const hs = headSlice(p, b, h);
      const m = new Float64Array(p.nq).fill(-Infinity);
      const l = new Float64Array(p.nq);
      const acc = new Float32Array(p.nq * dv);
      for (let j = 0; j < blockCount(p.nk, blockN); j++) {
        const c0 = j * blockN;
        const c1 = Math.min(p.nk, c0 + blockN);
        const cols = c1 - c0;
        const kv = { qBlock: -1, kvBlock: j, rows: [0, 0] as Range, cols: [c0, c1] as Range };
        let ev = tr.emit(
          'load',
          { b, h, outer: j, inner: -1, tile: kv, line: `${ID}.loadKV`, delta: { hbmRead: { K: cols * p.d * eb, V: cols * dv * eb } } },
          () => ({
            tensors: ['K' as const, 'V' as const],
          }),
        );
        if (ev) yield ev;
        for (let i = 0; i < blockCount(p.nq, blockM); i++) {
          const r0 = i * blockM;
          const r1 = Math.min(p.nq, r0 + blockM);
          const rows = r1 - r0;
          if (!blockHasVisible(sm, r0, r1, c0, c1, p.nk, b, h)) continue;
          const at = (line: string) => ({
            b,
            h,
            outer: j,
            inner: i,
            tile: { qBlock: i, kvBlock: j, rows: [r0, r1] as Range, cols: [c0, c1] as Range },
            line: `${ID}.${line}`,
          });
          if (scoreTile(p, sm, x, hs, r0, rows, c0, cols, s, blockN)) maskTile(p, sm, hs, r0, rows, c0, cols, s, blockN);
          ev = tr.emit('qk', { ...at('qk'), delta: { matmulFlops: 2 * rows * cols * p.d } }, () => ({
            s: tileValues(s, rows, cols, blockN),
          }));
          if (ev) yield ev;
          for (let r = 0; r < rows; r++) {
            const row = r0 + r;
            let mx = m[row];
            for (let c = 0; c < cols; c++) mx = Math.max(mx, s[r * blockN + c]);
            const factor = m[row] === -Infinity || mx === -Infinity ? (m[row] === -Infinity ? 0 : 1) : Math.exp(m[row] - mx);
            let sum = 0;
            for (let c = 0; c < cols; c++) {
              pt[r * blockN + c] = mx === -Infinity ? 0 : Math.exp(s[r * blockN + c] - mx);
              sum += pt[r * blockN + c];
            }
            l[row] = factor * l[row] + sum;
            for (let e = 0; e < dv; e++) acc[row * dv + e] *= factor;
            m[row] = mx;
          }
          roundTile(rounder, pt, rows, cols, blockN);
          accumulatePV(p, x, hs, pt, blockN, rows, c0, cols, acc.subarray(r0 * dv, r1 * dv), dv);
          ev = tr.emit('pv', { ...at('pv'), delta: { matmulFlops: 2 * rows * cols * dv, expCount: rows * cols } }, () => ({
            o: tileValues(acc.subarray(r0 * dv), rows, dv, dv),
          }));
          if (ev) yield ev;
        }
      }
      for (let row = 0; row < p.nq; row++) {
        const inv = l[row] > 0 ? 1 / l[row] : 0;
        for (let e = 0; e < dv; e++) o[hs.oBase + row * dv + e] = rounder ? rounder(acc[row * dv + e] * inv) : acc[row * dv + e] * inv;
        lse[(b * p.hq + h) * p.nq + row] = l[row] > 0 ? m[row] + Math.log(l[row]) : -Infinity;
      }
      const all = { qBlock: -1, kvBlock: -1, rows: [0, p.nq] as Range, cols: [0, 0] as Range };
      const ev = tr.emit(
        'write',
        { b, h, outer: -1, inner: -1, tile: all, line: `${ID}.write`, delta: { hbmWritten: { O: p.nq * dv * eb, LSE: p.nq * 4 } } },
        () => ({
          tensors: ['O' as const, 'LSE' as const],
        }),
      );
      if (ev) yield ev;
    }
  }
  const result: AlgorithmResult = { o, lse, counters: tr.counters, blocks: { blockM, blockN } };
  return result;
}

const variant = defineAlgorithm({
  ...fa2,
  id: ID,
  name: 'FA2 in FA1’s loop order',
  title: 'FA2 (K/V outer)',
  forward: { id: ID, name: 'FA2 in FA1’s loop order', blocks: resolveBlocks, run: runKvOuter },
  switches: SWITCHES,
  backward: undefined,
  backwardSchedule: undefined,
  backwardGpu: undefined,
});

const problem: AttentionProblem = { batch: 1, hq: 2, hk: 1, nq: 40, nk: 56, d: 16, dv: 8, causal: true, dtype: 'fp32' };
const request: LoadRequest = { algorithm: ID, problem, seed: 5, distribution: 'normal', blocks: { blockM: 16, blockN: 16 } };
const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => Array.from(a).reduce((w, v, i) => Math.max(w, Math.abs(v - b[i])), 0);

beforeAll(() => registerAlgorithm(variant));
afterAll(() => unregisterAlgorithm(ID));

describe('an algorithm registered from a test file', () => {
  it('is listed and looked up like a built-in, and its id is not taken twice', () => {
    expect(isBuiltIn(ID)).toBe(false);
    expect(descriptorOf(ID)).toBe(variant);
    expect(DESCRIPTORS.map((d) => d.id)).toContain(ID);
    expect(() => registerAlgorithm(variant)).toThrow(/already registered/);
    expect(() => unregisterAlgorithm(fa2.id)).toThrow(/built in/);
  });

  it('runs through `run` to the float64 reference, visiting K/V blocks in the outer loop', () => {
    const x = randomInputs(problem, { seed: 5 });
    const events: TraceEvent[] = [];
    const r = runToEnd(algorithmById(ID), problem, x, { blockM: 16, blockN: 16, trace: true, onEvent: (e) => events.push(e) });
    const ref = referenceAttention(problem, x);
    expect(maxAbs(r.o, ref.o)).toBeLessThan(1e-5);
    expect(maxAbs(r.lse, ref.lse)).toBeLessThan(1e-5);
    // FA1's order: within a head the K/V block never decreases while the Q blocks cycle under it.
    const head0 = events.filter((e) => e.h === 0 && e.tile.kvBlock >= 0).map((e) => e.tile.kvBlock);
    expect(head0).toEqual([...head0].sort((a, b) => a - b));
    expect(new Set(events.filter((e) => e.kind === 'qk' && e.tile.kvBlock === 2).map((e) => e.tile.qBlock)).size).toBeGreaterThan(1);
    // Switched off it is FA2 itself, bit for bit.
    const off = runToEnd(algorithmById(ID), problem, x, { blockM: 16, blockN: 16, features: { kvOuter: false } });
    expect(Array.from(off.o)).toEqual(Array.from(runToEnd(fa2.forward, problem, x, { blockM: 16, blockN: 16 }).o));
  });

  it('loads in the debugger session, steps and seeks, and compare judges it against the reference', async () => {
    const s = new DebuggerSession();
    const sum = await s.load(request);
    const plain = runToEnd(algorithmById(ID), problem, randomInputs(problem, { seed: 5 }), { blockM: 16, blockN: 16 });
    expect(sum.total).toBe(plain.counters.steps);
    expect(sum.algorithm).toBe(ID);
    await s.seek(sum.total - 1, true);
    const cmp = await s.compareData('h100');
    expect(cmp.error.maxAbs).toBeLessThan(1e-5);
    expect(cmp.prediction).toMatchObject({ reason: `no hardware model for ${ID}` });
    expect(cmp.hasTimeline).toBe(false);
  });

  it('brings its switch to the problem panel, and the panel’s request loads', async () => {
    const sws = panelSwitches(ID);
    expect(sws.map((sw) => [sw.key, sw.label])).toEqual([['kvOuter', 'K/V outer']]);
    expect(panelSwitchTitle(ID)).toBe('FA2 (K/V outer)');
    const req = formToRequest({ ...DEFAULT_FORM, algorithm: ID, switches: { kvOuter: false } });
    expect(req.features).toEqual({ kvOuter: false });
    const s = new DebuggerSession();
    const sum = await s.load({ ...req, seed: 5 });
    expect(sum.total).toBe(
      runToEnd(fa2.forward, req.problem, randomInputs(req.problem, { seed: 5 }), { blockM: 16, blockN: 16 }).counters.steps,
    );
  });
});
