import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../cli/run-command.ts';
import { randomInputs } from '../core/inputs.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import { MemorySource } from '../io/byte-source.ts';
import { DEFAULT_PROBLEM } from '../core/problem.ts';
import { referenceAttention } from '../core/reference.ts';

const dir = mkdtempSync(join(tmpdir(), 'fs-errjson-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('run writes error.json', () => {
  it('with max abs, RMSE and relative L1 of o.npy against a float64 reference computed here', async () => {
    const p = { ...DEFAULT_PROBLEM, hq: 2, hk: 2, nq: 24, nk: 40, d: 16, dv: 16, dtype: 'fp16' as const };
    const x = randomInputs(p, { seed: 4 });
    const save = (n: string, a: Float32Array, dims: number[]) => {
      writeFileSync(join(dir, n), encodeNpy(a, dims));
      return join(dir, n);
    };
    const out = join(dir, 'out');
    await runCommand.run([
      '--algo',
      'fa2,fa3',
      '--q',
      save('q.npy', x.q, [1, 2, 24, 16]),
      '--k',
      save('k.npy', x.k, [1, 2, 40, 16]),
      '--v',
      save('v.npy', x.v, [1, 2, 40, 16]),
      '--dtype',
      'fp16',
      '--out',
      out,
    ]);
    const ref = referenceAttention(p, x).o;
    for (const algo of ['fa2', 'fa3']) {
      const e = JSON.parse(readFileSync(join(out, algo, 'error.json'), 'utf8'));
      const o = (await readNpy(new MemorySource(new Uint8Array(readFileSync(join(out, algo, 'o.npy')))))).data;
      let mx = 0;
      let sq = 0;
      for (let i = 0; i < ref.length; i++) {
        mx = Math.max(mx, Math.abs(o[i] - ref[i]));
        sq += (o[i] - ref[i]) ** 2;
      }
      expect(e.max_abs).toBeCloseTo(mx, 12);
      expect(e.rmse).toBeCloseTo(Math.sqrt(sq / ref.length), 12);
      expect(e.max_abs).toBeGreaterThan(0); // fp16 P loses bits: never exactly the reference
      expect(e.rel_l1).toBeGreaterThan(0);
      expect(e.count).toBe(ref.length);
    }
  });
});
