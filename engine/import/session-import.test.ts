// A debugger session loading the person's tensors from Blobs (the browser's File path):
// the run steps the chosen head, its output matches the float64 reference on exactly
// those values, and a bad file leaves the loaded run untouched.

import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../debugger/session.ts';
import type { LoadRequest } from '../request.ts';
import { encodeNpy } from '../io/npy.ts';
import { referenceAttention } from '../core/reference.ts';
import { DEFAULT_PROBLEM } from '../core/problem.ts';

const seq = (n: number, s: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * s));

describe('session with imported tensors', () => {
  it('steps the chosen head; output equals the reference on the file values', async () => {
    const [B, H, N, D] = [1, 3, 24, 8];
    const q = seq(B * H * N * D, 0.7);
    const k = seq(B * H * N * D, 1.3);
    const v = seq(B * H * N * D, 0.4);
    const files = [new Blob([encodeNpy(q, [B, N, H, D])]), new Blob([encodeNpy(k, [B, N, H, D])]), new Blob([encodeNpy(v, [B, N, H, D])])];
    const req: LoadRequest = {
      algorithm: 'fa2',
      problem: { ...DEFAULT_PROBLEM, causal: true },
      seed: 0,
      distribution: 'normal',
      blocks: { blockM: 8, blockN: 8 },
      tensors: {
        files,
        names: ['q.npy', 'k.npy', 'v.npy'],
        q: { file: 0, tensor: 'q.npy' },
        k: { file: 1, tensor: 'k.npy' },
        v: { file: 2, tensor: 'v.npy' },
        layout: 'BNHD',
        batch: 0,
        head: 2,
      },
    };
    const s = new DebuggerSession();
    await s.load(req);
    const x = await s.headInputs(0, 0);
    expect([x.nq, x.nk, x.d]).toEqual([N, N, D]);
    for (let n = 0; n < N; n++) for (let c = 0; c < D; c++) expect(x.q[n * D + c]).toBe(q[(n * H + 2) * D + c]);
    const d = await s.compareData('h100');
    const ref = referenceAttention({ ...DEFAULT_PROBLEM, causal: true, nq: N, nk: N, d: D, dv: D }, { q: x.q, k: x.k, v: x.v });
    for (let i = 0; i < ref.o.length; i++) expect(Math.abs(d.output[i] - ref.o[i])).toBeLessThan(1e-5);

    const total = s.events().length;
    const bad = { ...req, tensors: { ...req.tensors!, files: [files[0], files[1], new Blob([new Uint8Array(30)])] } };
    await expect(s.load(bad)).rejects.toThrow(/v.npy: not a .npy file \(wrong magic/);
    expect(s.events().length).toBe(total);
  });
});

describe('session with imported tensors too large to step', () => {
  it('refuses from the .npy headers, before reading any data', async () => {
    const [N, D] = [8192, 64];
    let dataReads = 0;
    /** A .npy file of [1, N, 1, D] float32 whose header is real and whose data is only claimed. */
    const claimed = (name: string): Blob => {
      const whole = encodeNpy(new Float32Array(N * D), [1, N, 1, D]);
      const real = whole.slice(0, whole.length - N * D * 4);
      const size = whole.length;
      return {
        size,
        name,
        slice: (a: number, b: number) => ({
          arrayBuffer: async () => {
            if (b > real.length) {
              dataReads++;
              throw new Error('data read');
            }
            return real.slice(a, b).buffer;
          },
        }),
      } as unknown as Blob;
    };
    const req: LoadRequest = {
      algorithm: 'fa2',
      problem: DEFAULT_PROBLEM,
      seed: 0,
      distribution: 'normal',
      blocks: { blockM: 16, blockN: 16 },
      tensors: {
        files: [claimed('q.npy'), claimed('k.npy'), claimed('v.npy')],
        names: ['q.npy', 'k.npy', 'v.npy'],
        q: { file: 0, tensor: 'q.npy' },
        k: { file: 1, tensor: 'k.npy' },
        v: { file: 2, tensor: 'v.npy' },
        layout: 'BNHD',
        batch: 0,
        head: 0,
      },
    };
    await expect(new DebuggerSession().load(req)).rejects.toThrow(/too large to step through/);
    expect(dataReads).toBe(0);
  });
});
