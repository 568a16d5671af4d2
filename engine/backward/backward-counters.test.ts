// The backward counters against closed forms derived here from the algorithms as the
// papers write them, for one (b, h), no mask, Nq = Nk = N, tiles Br × Bc, Tr = N/Br,
// Tc = N/Bc, e bytes per input element (fp16: 2):
//
//   FA1 (Algorithm 4): every inner step reads Q_i, O_i, dO_i (e), dQ_i, l_i, m_i (4) and
//     writes dQ_i back (4); each column block reads K_j, V_j and writes dK_j, dV_j once;
//     dQ is zeroed once. HBM traffic = Θ(Tc·N·d) = Θ(N²d²/M) with Bc = Θ(M/d): the FA1
//     paper's Theorem 5.
//   FA2 (Algorithm 2): preprocessing reads O, dO and writes D and the zeroed dQaccum; each
//     inner step reads Q_i, dO_i (e), LSE_i, D_i (4) and atomically adds rows·d fp32 values
//     into dQaccum (4 bytes read + 4 written each); the postprocess reads dQaccum, writes dQ.
//   standard: P read twice and dS twice (e), dP written and read once (4), dS written once.
//   Matmuls, five per tile for the fused kernels: 2·N²·(3d + 2dv) (QKᵀ, dQ, dK: d; dV, dP: dv);
//   standard skips QKᵀ: 2·N²·(2d + 2dv). Exponentials: N² (standard: 0, P is read).

import { describe, expect, it } from 'vitest';
import { blocksFromSram } from '../algorithms/blocks.ts';
import { randomInputs } from '../core/inputs.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { runToEnd } from '../run.ts';
import { randomGradOutput } from './grad-output.ts';
import { backwardById } from '../algorithms/backward-registry.ts';
import type { BackwardInputs } from './types.ts';
import { addDelta, emptyCounters, type Counters } from '../core/counters.ts';

const N = 32;
const d = 8;
const dv = 12;
const Br = 8;
const Bc = 16;
const Tr = N / Br;
const Tc = N / Bc;
const e = 2;
const H = 2;
const P: AttentionProblem = { batch: 1, hq: H, hk: H, nq: N, nk: N, d, dv, causal: false, dtype: 'fp16' };

function counters(
  id: string,
  p: AttentionProblem,
  blocks: { blockM?: number; blockN?: number; sramBytes?: number },
  features?: Record<string, boolean>,
): Counters {
  const x: BackwardInputs = { ...randomInputs(p, { seed: 1 }), dO: randomGradOutput(p, 1) };
  return runToEnd(backwardById(id), p, x, { ...blocks, features }).counters;
}
const times = (r: Record<string, number>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v * H]));

describe('backward counters: closed forms', () => {
  it('fa1 (Algorithm 4)', () => {
    const c = counters('fa1', P, { blockM: Br, blockN: Bc });
    expect(c.hbmRead).toEqual(
      times({
        K: N * d * e,
        V: N * dv * e,
        Q: Tc * N * d * e,
        O: Tc * N * dv * e,
        dO: Tc * N * dv * e,
        dQ: 4 * Tc * N * d,
        l: 4 * Tc * N,
        m: 4 * Tc * N,
      }),
    );
    expect(c.hbmWritten).toEqual(times({ dQ: 4 * N * d + 4 * Tc * N * d, dK: N * d * e, dV: N * dv * e }));
    expect(c.matmulFlops).toBe(H * 2 * N * N * (3 * d + 2 * dv));
    expect(c.expCount).toBe(H * N * N);
    expect(c.nonMatmulFlops).toBe(H * (6 * N * N + Tc * N * (2 * dv + d)));
    expect(c.atomicAdds).toBe(0);
    expect(c.steps).toBe(H * (1 + Tc * (2 + 9 * Tr)));
  });

  it('fa2 (Algorithm 2)', () => {
    const c = counters('fa2', P, { blockM: Br, blockN: Bc });
    expect(c.hbmRead).toEqual(
      times({
        O: N * dv * e,
        dO: N * dv * e + Tc * N * dv * e,
        K: N * d * e,
        V: N * dv * e,
        Q: Tc * N * d * e,
        LSE: 4 * Tc * N,
        D: 4 * Tc * N,
        dQaccum: 4 * Tc * N * d + 4 * N * d,
      }),
    );
    expect(c.hbmWritten).toEqual(times({ D: 4 * N, dQaccum: 4 * N * d + 4 * Tc * N * d, dK: N * d * e, dV: N * dv * e, dQ: N * d * e }));
    expect(c.matmulFlops).toBe(H * 2 * N * N * (3 * d + 2 * dv));
    expect(c.expCount).toBe(H * N * N);
    expect(c.nonMatmulFlops).toBe(H * (2 * N * dv + 5 * N * N + Tc * N * d + N * d));
    expect(c.atomicAdds).toBe(H * Tc * N * d);
    expect(c.steps).toBe(H * (3 * Tr + Tc * (2 + 8 * Tr) + Tr));
  });

  it('fa3: FA2’s traffic plus the preprocess kernel’s LSE rescale; the same atomics', () => {
    const c = counters('fa3', P, { blockM: Br, blockN: Bc });
    const f2 = counters('fa2', P, { blockM: Br, blockN: Bc });
    expect(c.hbmRead).toEqual({ ...f2.hbmRead, LSE: f2.hbmRead.LSE! + H * 4 * N });
    expect(c.hbmWritten).toEqual({ ...f2.hbmWritten, LSE: H * 4 * N });
    expect(c.matmulFlops).toBe(f2.matmulFlops);
    expect(c.atomicAdds).toBe(f2.atomicAdds);
    expect(counters('fa3', P, { blockM: Br, blockN: Bc }, { deterministic: true }).hbmRead).toEqual(c.hbmRead);
  });

  it('standard (Algorithm 3): P, dP, dS through HBM, no recompute', () => {
    const c = counters('standard', P, { blockM: Br });
    expect(c.hbmRead).toEqual(
      times({ P: 2 * N * N * e, dO: 2 * N * dv * e, V: N * dv * e, dP: 4 * N * N, K: N * d * e, dS: 2 * N * N * e, Q: N * d * e }),
    );
    expect(c.hbmWritten).toEqual(times({ dV: N * dv * e, dP: 4 * N * N, dS: N * N * e, dQ: N * d * e, dK: N * d * e }));
    expect(c.matmulFlops).toBe(H * 2 * N * N * (2 * d + 2 * dv));
    expect(c.expCount).toBe(0);
    expect(c.nonMatmulFlops).toBe(H * (4 * N * N + N * d));
    expect(c.steps).toBe(H * (4 + 13 * Tr));
  });

  it('FA1 Theorem 5: the traffic that grows with N²d²/M shrinks 4× when M grows 4×', () => {
    const p: AttentionProblem = { ...P, nq: 256, nk: 256, d: 16, dv: 16, hq: 1, hk: 1 };
    const quadratic = (c: Counters) =>
      c.hbmRead.Q! + c.hbmRead.O! + c.hbmRead.dO! + c.hbmRead.dQ! + c.hbmRead.l! + c.hbmRead.m! + c.hbmWritten.dQ! - 4 * 256 * 16;
    const small = counters('fa1', p, { sramBytes: 4096 });
    const big = counters('fa1', p, { sramBytes: 4 * 4096 });
    const bc = (m: number) => blocksFromSram(m, 16).blockN;
    expect(bc(4096) * 4).toBe(bc(4 * 4096));
    expect(quadratic(small)).toBe(4 * quadratic(big));
    // Exactly Tc · N · (Q, O, dO at 2 bytes; dQ read and written, l, m at 4): Tc = N / Bc and Bc = ⌈M/(16d)⌉.
    const perTc = 256 * (3 * 16 * 2 + 4 * 16 + 4 + 4 + 4 * 16);
    expect(quadratic(small)).toBe((256 / bc(4096)) * perTc);
  });

  it('causal: fully masked tiles are skipped (matmuls over the T(T+1)/2 visible tiles)', () => {
    const p = { ...P, causal: true };
    for (const id of ['fa1', 'fa2', 'fa3']) {
      const c = counters(id, p, { blockM: 8, blockN: 8 });
      const T = N / 8;
      expect(c.matmulFlops, id).toBe(H * ((T * (T + 1)) / 2) * 2 * 8 * 8 * (3 * d + 2 * dv));
      expect(c.expCount, id).toBe(H * ((T * (T + 1)) / 2) * 64);
    }
  });

  it('GQA: the second query head of a group adds into dK/dV (fp32 read-modify-write; atomic for fa2/fa3)', () => {
    const p = { ...P, hq: 4, hk: 2 };
    for (const id of ['fa1', 'fa2']) {
      const c = counters(id, p, { blockM: Br, blockN: Bc });
      expect(c.hbmWritten.dK, id).toBe(4 * 4 * N * d);
      expect(c.hbmRead.dK, id).toBe(2 * 4 * N * d);
      expect(c.hbmRead.dV, id).toBe(2 * 4 * N * dv);
      expect(c.atomicAdds, id).toBe(id === 'fa1' ? 0 : 4 * Tc * N * d + 2 * N * (d + dv));
    }
  });

  it('tracing on and off count the same', () => {
    const x: BackwardInputs = { ...randomInputs(P, { seed: 1 }), dO: randomGradOutput(P, 1) };
    for (const id of ['standard', 'fa1', 'fa2', 'fa3']) {
      const off = runToEnd(backwardById(id), P, x, { blockM: Br, blockN: Bc }).counters;
      const on = runToEnd(backwardById(id), P, x, { blockM: Br, blockN: Bc, trace: true }).counters;
      expect(on, id).toEqual(off);
    }
  });
});

describe('backward traces keep TRACE.md’s ordering guarantees', () => {
  const variants: Partial<AttentionProblem>[] = [
    {},
    { causal: true, nq: 40, nk: 24 },
    { hq: 4, hk: 1, window: { left: 5, right: 2 } },
    { softcap: 2, sinks: [1, 0] },
  ];
  for (const id of ['standard', 'fa1', 'fa2', 'fa3'])
    it.each(variants.map((v) => [JSON.stringify(v), v] as const))(
      `${id} %s: steps 0..n−1, (b, h) contiguous, deltas sum to the counters`,
      (_n, over) => {
        const p = { ...P, dtype: 'fp32' as const, ...over };
        const x: BackwardInputs = { ...randomInputs(p, { seed: 6 }), dO: randomGradOutput(p, 6) };
        const evs: { step: number; b: number; h: number; delta: import('../core/counters.ts').CounterDelta }[] = [];
        const r = runToEnd(backwardById(id), p, x, { blockM: 8, blockN: 8, trace: true, onEvent: (e) => evs.push(e) });
        expect(evs.map((e) => e.step)).toEqual(evs.map((_, i) => i));
        expect(evs.length).toBe(r.counters.steps);
        const heads = evs.map((e) => `${e.b},${e.h}`).filter((k, i, a) => i === 0 || a[i - 1] !== k);
        expect(new Set(heads).size).toBe(heads.length);
        const total = emptyCounters();
        for (const e of evs) addDelta(total, e.delta);
        expect({ ...total, steps: r.counters.steps }).toEqual(r.counters);
      },
    );
});
