// `run --backend webgpu` on the serving layouts: the CPU contract's files in, the same
// o.npy / lse.npy shapes out, checked against engine/layouts' float64 references; a paged
// pool with NaN in every slot no sequence owns; a bad offset refused with the CPU run's
// message and nothing written. Runs the CLI in process on SwiftShader's Vulkan driver (shipped
// with Debian's chromium, which the browser tests need too); skipped without it.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { roundArray } from '../core/dtype.ts';
import { MemorySource } from '../io/byte-source.ts';
import { encodeNpy, readNpy } from '../io/npy.ts';
import { referencePaged } from '../layouts/paged.ts';
import { referenceVarlen } from '../layouts/varlen.ts';
import { hasSwiftShader } from '../webgpu/swiftshader.ts';
import { runCliCaptured } from './run-cli-captured.ts';
import { pagedCase, PAGED_VARIANTS, VARLEN_VARIANTS, varlenInputs } from '../webgpu/serving-checks.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-layout-webgpu-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, values: ArrayLike<number>, shape: number[], dtype: 'float32' | 'int32' = 'float32') => {
  writeFileSync(join(dir, name), encodeNpy(values, shape, dtype));
  return join(dir, name);
};
const load = async (f: string) => readNpy(new MemorySource(readFileSync(f), f));

async function cli(args: string[]): Promise<{ status: number; out: string }> {
  const r = await runCliCaptured(['run', '--backend', 'webgpu', ...args]);
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

function maxErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < b.length; i++) {
    const e = a[i] === b[i] ? 0 : Math.abs(a[i] - b[i]);
    m = Number.isNaN(e) ? Infinity : Math.max(m, e);
  }
  return m;
}

describe.skipIf(!hasSwiftShader())('run --backend webgpu, serving layouts', () => {
  it('varlen: o [total_q, Hq, dv] and lse [Hq, total_q] match the float64 reference (empty sequences, causal, GQA)', async () => {
    const { vp } = VARLEN_VARIANTS[0];
    const x = varlenInputs(vp, 3);
    const { hq, hk, d, dv } = vp.base;
    const tq = vp.cuSeqlensQ.at(-1)!;
    const tk = vp.cuSeqlensK.at(-1)!;
    const out = join(dir, 'varlen');
    const r = await cli([
      '--q',
      file('q.npy', x.q, [tq, hq, d]),
      '--k',
      file('k.npy', x.k, [tk, hk, d]),
      '--v',
      file('v.npy', x.v, [tk, hk, dv]),
      '--cu-seqlens-q',
      file('cq.npy', vp.cuSeqlensQ, [vp.cuSeqlensQ.length], 'int32'),
      '--cu-seqlens-k',
      file('ck.npy', vp.cuSeqlensK, [vp.cuSeqlensK.length], 'int32'),
      '--causal',
      '--out',
      out,
      '--repeats',
      '1',
    ]);
    expect(r.status, r.out).toBe(0);
    const o = await load(join(out, 'webgpu-flash-f32', 'o.npy'));
    const lse = await load(join(out, 'webgpu-flash-f32', 'lse.npy'));
    expect(o.info.shape).toEqual([tq, hq, dv]);
    expect(lse.info.shape).toEqual([hq, tq]);
    const ref = referenceVarlen(vp, x);
    expect(maxErr(o.data, ref.o)).toBeLessThan(2e-5);
    expect(maxErr(lse.data, ref.lse)).toBeLessThan(2e-5);
    const stats = JSON.parse(readFileSync(join(out, 'webgpu-flash-f32', 'stats.json'), 'utf8'));
    expect(stats.config).toMatch(/^varlen row kernel/);
  }, 120_000);

  it('paged: o [B, Nq, Hq, dv] (bnhd) and lse [B, Hq, Nq] match the reference with NaN in every unowned slot', async () => {
    const v = PAGED_VARIANTS[1]; // Nq = 2, causal, GQA, ALiBi, sinks
    const { pp, x } = pagedCase(v, 9);
    // The decode path stores q and the caches in f16: give it values f16 holds exactly, so the
    // float64 reference sees what the GPU reads.
    for (const t of [x.q, x.kCache, x.vCache]) roundArray('fp16', t);
    const { hq, hk, d, dv } = pp.base;
    const B = pp.batch;
    const nq = pp.nq;
    // q to [B, Nq, Hq, d]
    const qb = new Float32Array(x.q.length);
    for (let b = 0; b < B; b++)
      for (let h = 0; h < hq; h++)
        for (let n = 0; n < nq; n++) for (let c = 0; c < d; c++) qb[((b * nq + n) * hq + h) * d + c] = x.q[((b * hq + h) * nq + n) * d + c];
    const out = join(dir, 'paged');
    const r = await cli([
      '--q',
      file('pq.npy', qb, [B, nq, hq, d]),
      '--layout',
      'bnhd',
      '--k-cache',
      file('kc.npy', x.kCache, [pp.numPages, pp.pageSize, hk, d]),
      '--v-cache',
      file('vc.npy', x.vCache, [pp.numPages, pp.pageSize, hk, dv]),
      '--block-table',
      file('bt.npy', pp.blockTable, [B, pp.maxPages], 'int32'),
      '--cache-seqlens',
      file('cs.npy', pp.cacheSeqlens, [B], 'int32'),
      '--causal',
      '--alibi',
      '--sink',
      file('sink.npy', pp.base.sinks!, [hq]),
      '--out',
      out,
      '--repeats',
      '1',
    ]);
    expect(r.status, r.out).toBe(0);
    const o = await load(join(out, 'webgpu-decode', 'o.npy'));
    const lse = await load(join(out, 'webgpu-decode', 'lse.npy'));
    expect(o.info.shape).toEqual([B, nq, hq, dv]);
    expect(lse.info.shape).toEqual([B, hq, nq]);
    const ref = referencePaged(pp, x);
    const refB = new Float64Array(ref.o.length);
    for (let b = 0; b < B; b++)
      for (let h = 0; h < hq; h++)
        for (let n = 0; n < nq; n++)
          for (let c = 0; c < dv; c++) refB[((b * nq + n) * hq + h) * dv + c] = ref.o[((b * hq + h) * nq + n) * dv + c];
    expect(maxErr(o.data, refB)).toBeLessThan(2e-5);
    expect(maxErr(lse.data, ref.lse)).toBeLessThan(2e-5);
  }, 120_000);

  it('refuses offsets that are not non-decreasing, naming the tensor and index, and writes nothing', async () => {
    const { vp } = VARLEN_VARIANTS[0];
    const x = varlenInputs(vp, 3);
    const { hq, hk, d, dv } = vp.base;
    const tq = vp.cuSeqlensQ.at(-1)!;
    const tk = vp.cuSeqlensK.at(-1)!;
    const bad = [...vp.cuSeqlensQ];
    bad[2] = bad[1] - 1;
    const out = join(dir, 'refused');
    const r = await cli([
      '--q',
      file('q2.npy', x.q, [tq, hq, d]),
      '--k',
      file('k2.npy', x.k, [tk, hk, d]),
      '--v',
      file('v2.npy', x.v, [tk, hk, dv]),
      '--cu-seqlens-q',
      file('cq2.npy', bad, [bad.length], 'int32'),
      '--cu-seqlens-k',
      file('ck2.npy', vp.cuSeqlensK, [vp.cuSeqlensK.length], 'int32'),
      '--out',
      out,
    ]);
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('cu_seqlens_q[2]');
    expect(r.out).toContain('non-decreasing');
    expect(existsSync(out)).toBe(false);
  }, 120_000);
});
