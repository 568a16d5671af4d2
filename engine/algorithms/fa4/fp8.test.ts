// FA4's FP8 forward, stepped (fa4 with dtype fp8e4m3 / fp8e5m2), against the float64 reference,
// with the quantization the hardware model assumes (flash_attn/cute/flash_fwd_sm100.py@0251105a):
// one descale per (batch, KV head), P·2^8 cast to the input format before P·V (l. 85-90, 2182), no
// lazy rescale (l. 2190), O in bf16 (interface.py l. 700).

import { describe, expect, it } from 'vitest';
import { fa3 } from '../fa3/forward.ts';
import { fa4 } from './forward.ts';
import { fa4Fp8RescaleThreshold } from './fp8.ts';
import { fa4Config } from './tiles.ts';
import { randomInputs } from '../../core/inputs.ts';
import { DEFAULT_PROBLEM, type AttentionProblem, type DType } from '../../core/problem.ts';
import { referenceAttention } from '../../core/reference.ts';
import { outputError } from '../../lowprec/error-metrics.ts';
import { roundFp8 } from '../../lowprec/fp8.ts';
import { runToEnd } from '../../run.ts';
import type { ExpEvent, TraceEvent } from '../../trace/events.ts';

const p: AttentionProblem = { ...DEFAULT_PROBLEM, batch: 1, hq: 2, hk: 1, nq: 128, nk: 128, d: 64, dv: 64, causal: true };
const x = randomInputs(p, { seed: 3 });
const ref = referenceAttention(p, x).o;

function run(dtype: DType, features?: Record<string, number | boolean>) {
  const events: TraceEvent[] = [];
  const r = runToEnd(fa4, { ...p, dtype }, x, { trace: true, onEvent: (e) => void events.push(e), ...(features ? { features } : {}) });
  return { r, events, rmse: outputError(r.o, ref).rmse };
}

describe('FA4 FP8 forward against float64', () => {
  const bf16 = run('bf16');
  const e4 = run('fp8e4m3');
  const e5 = run('fp8e5m2');

  it("errs within FP8's bounds: below 0.05 RMSE in e4m3 (3 mantissa bits), more in e5m2 (2 bits), both far above bf16", () => {
    expect(e4.rmse).toBeLessThan(0.05);
    expect(e4.rmse).toBeGreaterThan(10 * bf16.rmse);
    expect(e5.rmse).toBeGreaterThan(1.3 * e4.rmse);
    expect(e5.rmse).toBeLessThan(0.1);
    // The same per-(batch, KV head) quantization as FA3's shipped FP8 path: the same error to a few per cent.
    const fa3e4 = outputError(runToEnd(fa3, { ...p, dtype: 'fp8e4m3' }, x).o, ref).rmse;
    expect(Math.abs(e4.rmse - fa3e4)).toBeLessThan(0.05 * fa3e4);
  });

  it('P as P·V reads it is the input format times 2⁻⁸, at most 1 (no lazy rescale); O is bf16', () => {
    for (const [run8, format] of [
      [e4, 'e4m3'],
      [e5, 'e5m2'],
    ] as const) {
      const exps = run8.events.filter((e): e is ExpEvent => e.kind === 'exp');
      expect(exps.length).toBeGreaterThan(0);
      // Counted, not asserted one by one: a traced run casts some 65 000 values.
      let offGrid = 0;
      let aboveOne = 0;
      for (const e of exps) {
        expect(e.pScale).toBe(256);
        for (const v of e.p) {
          if (roundFp8(format, v * 256) !== v * 256) offGrid++;
          if (v > 1) aboveOne++;
        }
      }
      expect([offGrid, aboveOne]).toEqual([0, 0]);
      let low = 0;
      const bits = new Uint32Array(new Float32Array(run8.r.o).buffer);
      for (const b of bits) low |= b & 0xffff;
      expect(low).toBe(0);
      expect(run8.r.stats?.castP).toBeGreaterThan(0);
    }
  });

  it("takes _FP8_TUNING_CONFIG's exp2 pattern: freq 8 for causal d 128, 16 in bf16 (flash_fwd_sm100.py l. 112-119, 514-518)", () => {
    const c = (dtype: DType) => fa4Config({ d: 128, dv: 128, dtype, causal: true, nq: 512 }).exp2;
    expect(c('fp8e4m3')).toMatchObject({ freq: 8, startFrg: 1 });
    expect(c('bf16')).toMatchObject({ freq: 16, startFrg: 1 });
  });

  it('a given rescale threshold must keep P·2⁸ inside the format, as upstream asserts', () => {
    const fp8 = { ...p, dtype: 'fp8e4m3' as const };
    expect(fa4Fp8RescaleThreshold(fp8, undefined)).toBe(0);
    // log2(448) = 8.807: 8 + 0.5 fits, 8 + 1 does not (flash_fwd_sm100.py l. 2192-2195).
    expect(fa4Fp8RescaleThreshold(fp8, 0.5)).toBe(0.5);
    expect(() => runToEnd(fa4, fp8, x, { features: { rescaleThreshold: 1 } })).toThrow(/max_offset \(8\) \+ rescale_threshold \(1\)/);
    // e5m2 reaches 57344 = 2^15.8.
    expect(fa4Fp8RescaleThreshold({ ...p, dtype: 'fp8e5m2' }, 7)).toBe(7);
  });
});
