// `npm run bench:webgpu -- --serving`: the serving layouts' rows of the WebGPU benchmark.
//
//   paged decode: B = 32, Hq = 32, Hk = 8, d = 128, Nq = 1, pages of 64 tokens, sequence lengths
//     drawn log-uniform from 1k–32k (fixed seed), pages dealt to sequences in a shuffled order
//     from a pool with 5% spare pages. Reported as TB/s of unique K/V bytes (every owned token's
//     K and V rows once per key head, f16), next to the dense decode path on the same bytes
//     (B = 32, every sequence at the mean length).
//   varlen prefill: the packed forward against the dense path's TFLOP/s for the same total
//     tokens: four sequences of 4096 (the dense B = 4, N = 4096 problem, packed) and a mix of
//     eight lengths summing to 16384; H = 16, d = 64 and 128, causal and not, on every path the
//     varlen forward runs on. FLOPs are the dense convention per sequence, summed.
//
// Before any timing, the serving kernel checks (engine/webgpu/serving-checks.ts) run on every
// path; after each timed run, sampled rows are recomputed in float64 from the inputs as the GPU
// holds them (for the paged run: from the pages the block table names). --quick shrinks every
// shape (a SwiftShader smoke run).

import { nominalFlops } from '../core/problem.ts';
import { mulberry32 } from '../core/random.ts';
import type { PagedProblem } from '../layouts/paged.ts';
import { sequenceProblem } from '../layouts/sequence-runner.ts';
import { seqOffsets, type VarlenProblem } from '../layouts/varlen.ts';
import { AttentionRun, pathElem } from '../webgpu/backend.ts';
import type { WebGpuContext } from '../webgpu/device.ts';
import { referenceRow } from '../webgpu/row-check.ts';
import { checkPaged, checkVarlen } from '../webgpu/serving-checks.ts';
import { PagedDecodeGpuRun, VARLEN_PATHS, VarlenGpuRun } from '../webgpu/serving-runs.ts';
import { timeSteady } from '../webgpu/steady-timing.ts';
import type { KernelTime } from '../webgpu/timer.ts';

export interface ServingBenchOptions {
  quick: boolean;
  reps: number;
  /** Only these paths (the varlen rows). */
  paths?: string[];
}

/** Timed as the main bench times (steady-timing.ts): median and spread of the summed kernel times. */
async function time(
  run: { execute(repeat?: number): Promise<KernelTime[]> },
  reps: number,
  single = false,
): Promise<{ ms: number; spread: string; kernels: string }> {
  const t = await timeSteady((b) => run.execute(b), { reps, singleSubmit: single });
  return {
    ms: t.ms,
    spread: `${Math.min(...t.totals).toFixed(3)}–${Math.max(...t.totals).toFixed(3)} ms${t.batch > 1 ? `, ${t.batch} back to back` : ''}`,
    kernels: t.kernels.map((k) => `${k.name} ${k.ms.toFixed(3)} ms`).join(', '),
  };
}

/** Sequence lengths log-uniform in [lo, hi] (seeded). */
export function logUniformLengths(n: number, lo: number, hi: number, seed: number): number[] {
  const r = mulberry32(seed);
  return Array.from({ length: n }, () => Math.round(Math.exp(Math.log(lo) + r() * (Math.log(hi) - Math.log(lo)))));
}

/** A paged problem with the given lengths: a pool with 5% spare pages, dealt in a shuffled order. */
export function benchPagedProblem(lengths: number[], pageSize: number, base: PagedProblem['base'], seed: number): PagedProblem {
  const r = mulberry32(seed);
  const per = lengths.map((L) => Math.ceil(L / pageSize));
  const used = per.reduce((a, n) => a + n, 0);
  const numPages = used + Math.ceil(used / 20);
  const order = Array.from({ length: numPages }, (_, i) => i);
  for (let i = numPages - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const maxPages = Math.max(...per);
  const blockTable = new Array<number>(lengths.length * maxPages).fill(-1);
  let t = 0;
  per.forEach((n, b) => {
    for (let j = 0; j < n; j++) blockTable[b * maxPages + j] = order[t++];
  });
  return { base, batch: lengths.length, nq: 1, numPages, pageSize, maxPages, blockTable, cacheSeqlens: lengths };
}

/** Max |GPU − float64| over sampled (sequence, head) rows of a paged run, recomputed from the pages the table names. */
export async function checkPagedRows(run: PagedDecodeGpuRun, seqs: number[]): Promise<number> {
  const pp = run.pp;
  const { hq, hk, d, dv } = pp.base;
  const g = hq / hk;
  const q = await run.readQ();
  const { o, lse } = await run.read();
  let err = 0;
  for (const b of seqs) {
    const L = pp.cacheSeqlens[b];
    const h = (b * 7) % hq;
    const kh = Math.floor(h / g);
    const k = new Float32Array(L * d);
    const v = new Float32Array(L * dv);
    for (let j = 0; j * pp.pageSize < L; j++) {
      const page = pp.blockTable[b * pp.maxPages + j];
      const [kp, vp] = await Promise.all([run.readPage('k', page), run.readPage('v', page)]);
      for (let t = 0; t < pp.pageSize && j * pp.pageSize + t < L; t++) {
        const key = j * pp.pageSize + t;
        k.set(kp.subarray((t * hk + kh) * d, (t * hk + kh + 1) * d), key * d);
        v.set(vp.subarray((t * hk + kh) * dv, (t * hk + kh + 1) * dv), key * dv);
      }
    }
    const p = sequenceProblem(pp.base, 1, L);
    const ref = referenceRow(p, h, 0, q.subarray((b * hq + h) * d, (b * hq + h + 1) * d), k, v);
    const row = b * hq + h;
    for (let c = 0; c < dv; c++) err = Math.max(err, Math.abs(o[row * dv + c] - ref.o[c]));
    err = Math.max(err, Math.abs(lse[row] - ref.lse));
  }
  return Number.isNaN(err) ? Infinity : err;
}

/** Max |GPU − float64| over sampled rows of a varlen run (first and last row of the first, a middle and the last sequence). */
async function checkVarlenRows(run: VarlenGpuRun): Promise<number> {
  const vp = run.vp;
  const { hq, hk, d, dv } = vp.base;
  const x = await run.readInputs();
  const { o, lse } = await run.read();
  const tq = vp.cuSeqlensQ[vp.cuSeqlensQ.length - 1];
  const B = vp.cuSeqlensQ.length - 1;
  let err = 0;
  for (const s of [0, Math.floor(B / 2), B - 1]) {
    const q0 = vp.cuSeqlensQ[s];
    const nq = vp.cuSeqlensQ[s + 1] - q0;
    const k0 = vp.cuSeqlensK[s];
    const nk = vp.cuSeqlensK[s + 1] - k0;
    if (nq === 0 || nk === 0) continue;
    const h = (s * 5) % hq;
    const kh = Math.floor(h / (hq / hk));
    const k = new Float32Array(nk * d);
    const v = new Float32Array(nk * dv);
    for (let j = 0; j < nk; j++) {
      k.set(x.k.subarray(((k0 + j) * hk + kh) * d, ((k0 + j) * hk + kh + 1) * d), j * d);
      v.set(x.v.subarray(((k0 + j) * hk + kh) * dv, ((k0 + j) * hk + kh + 1) * dv), j * dv);
    }
    const p = sequenceProblem(vp.base, nq, nk);
    for (const i of [0, nq - 1]) {
      const ref = referenceRow(p, h, i, x.q.subarray(((q0 + i) * hq + h) * d, ((q0 + i) * hq + h + 1) * d), k, v);
      for (let c = 0; c < dv; c++) err = Math.max(err, Math.abs(o[((q0 + i) * hq + h) * dv + c] - ref.o[c]));
      const l = lse[h * tq + q0 + i];
      err = Math.max(err, l === ref.lse ? 0 : Math.abs(l - ref.lse));
    }
  }
  return Number.isNaN(err) ? Infinity : err;
}

export async function servingBench(ctx: WebGpuContext, opts: ServingBenchOptions): Promise<number> {
  const { quick, reps } = opts;
  const varlenPaths = VARLEN_PATHS.filter((p) => ctx.paths.includes(p) && (!opts.paths || opts.paths.includes(p)));
  // Self-test first: a kernel that fails it is not timed (its rows say so); the others still are.
  let worst = 0;
  const failed = new Set<string>();
  const report = (key: string, label: string, rs: { variant: string; maxErrO: number; maxErrLse: number; error?: string }[], scale = 1) => {
    let w = 0;
    for (const r of rs) w = Math.max(w, r.error ? Infinity : Math.max(r.maxErrO, r.maxErrLse) / scale);
    if (!(w < 1e-4)) failed.add(key);
    worst = Math.max(worst, w);
    console.log(
      `self-test ${label}: ${rs.map((r) => (r.error ? `${r.variant} FAILED (${r.error.slice(0, 300)})` : `${r.variant} ${Math.max(r.maxErrO, r.maxErrLse).toExponential(1)}`)).join(', ')}`,
    );
  };
  report('decode', 'paged decode', await checkPaged(ctx));
  report('decode', 'paged decode, one page per split', await checkPaged(ctx, undefined, { splitPages: 1 }));
  for (const path of varlenPaths) {
    // f16 inputs and, on the subgroup-matrix path, f16 P: errors scaled as the dense self-test's
    const scale = pathElem(path) === 'f16' ? 30 : 1;
    report(path, `varlen ${path}`, await checkVarlen(ctx, path), scale);
    if (path !== 'flash-matrix')
      report(path, `varlen ${path} (tiled kernel)`, await checkVarlen(ctx, path, undefined, { flashKernel: 'tiled' }), scale);
  }
  console.log(
    `self-test: ${worst < 1e-4 ? 'serving kernels match the float64 reference' : `MISMATCH on ${[...failed].join(', ')} — see above; those rows are skipped`}\n`,
  );

  // ---- paged decode ----
  const B = quick ? 4 : 32;
  const lengths = quick ? logUniformLengths(B, 64, 1024, 2024) : logUniformLengths(B, 1024, 32768, 2024);
  const base = { hq: 32, hk: 8, d: 128, dv: 128, causal: false, dtype: 'fp32' as const };
  const dbase = quick ? { ...base, hq: 8, hk: 2 } : base;
  const pp = benchPagedProblem(lengths, 64, dbase, 7);
  const tokens = lengths.reduce((a, n) => a + n, 0);
  console.log(
    `paged decode B=${B} Hq=${dbase.hq} Hk=${dbase.hk} d=128 Nq=1, page 64: lengths ${Math.min(...lengths)}–${Math.max(...lengths)} (log-uniform, seed 2024), ${tokens} tokens in ${pp.numPages} pages (${pp.numPages - pp.blockTable.filter((e) => e >= 0).length} spare)`,
  );
  let paged: PagedDecodeGpuRun | undefined;
  try {
    if (failed.has('decode')) throw new Error('skipped: the paged self-test failed');
    paged = await PagedDecodeGpuRun.create(ctx, pp);
    await paged.fillRandom(99);
    const t = await time(paged, reps);
    const sorted = lengths.map((L, b) => [L, b]).sort((a, b) => a[0] - b[0]);
    const err = await checkPagedRows(paged, [sorted[0][1], sorted[Math.floor(B / 2)][1], sorted[B - 1][1]]);
    const bytes = paged.uniqueKvBytes();
    console.log(
      `  paged flash-decoding  ${(bytes / (t.ms * 1e9)).toFixed(3)} TB/s of unique K/V  ${t.ms.toFixed(3)} ms (${t.spread})  maxerr ${err.toExponential(1)}   [${paged.config}; ${t.kernels}]`,
    );
    if (!(err < 1e-4)) worst = Infinity;
  } catch (e) {
    console.log(`  paged flash-decoding  FAILED: ${e instanceof Error ? e.message : String(e)}`);
    worst = Infinity;
  } finally {
    paged?.destroy();
  }
  // The dense decode path on the same unique bytes: every sequence at the mean length.
  {
    const nk = Math.round(tokens / B);
    const p = { ...dbase, batch: B, nq: 1, nk };
    let run: AttentionRun | undefined;
    try {
      run = await AttentionRun.create(ctx, p, { path: 'decode' });
      await run.fillRandom(99);
      const t = await time(run, reps);
      const bytes = B * nk * dbase.hk * (dbase.d + dbase.dv) * 2; // f16, as the paged run
      console.log(
        `  dense decode, Nk=${nk} ${(bytes / (t.ms * 1e9)).toFixed(3)} TB/s of unique K/V  ${t.ms.toFixed(3)} ms (${t.spread})   [${run.config}]`,
      );
    } catch (e) {
      console.log(`  dense decode FAILED: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      run?.destroy();
    }
  }

  // ---- varlen prefill against dense, same total tokens ----
  const N = quick ? 256 : 4096;
  const mixes: { name: string; lengths: number[] }[] = [
    { name: `4 × ${N} (the dense problem, packed)`, lengths: [N, N, N, N] },
    { name: 'mixed lengths', lengths: quick ? [384, 256, 128, 96, 64, 32, 40, 24] : [6144, 4096, 2048, 1536, 1024, 768, 512, 256] },
  ];
  const H = quick ? 4 : 16;
  for (const d of quick ? [64] : [64, 128]) {
    for (const causal of [false, true]) {
      console.log(`\nvarlen prefill H=${H} d=${d} ${causal ? 'causal' : 'non-causal'}, ${4 * N} tokens`);
      for (const path of varlenPaths) {
        const dense = {
          batch: 4,
          hq: H,
          hk: H,
          nq: N,
          nk: N,
          d,
          dv: d,
          causal,
          dtype: (pathElem(path) === 'f16' ? 'fp16' : 'fp32') as 'fp16' | 'fp32',
        };
        let denseTflops: number | undefined;
        let run: AttentionRun | undefined;
        try {
          run = await AttentionRun.create(ctx, dense, { path });
          await run.fillRandom(3);
          const t = await time(run, reps);
          denseTflops = nominalFlops(dense) / (t.ms * 1e9);
          console.log(
            `  ${path.padEnd(16)} dense B=4 N=${N}          ${denseTflops.toFixed(2).padStart(7)} TFLOP/s ${t.ms.toFixed(3).padStart(9)} ms (${t.spread})   [${run.config}]`,
          );
          // Each run also submitted alone: batched submissions read causal rows well below the main bench's.
          const alone = await time(run, reps, true);
          console.log(
            `  ${path.padEnd(16)} dense, each run submitted alone ${(nominalFlops(dense) / (alone.ms * 1e9)).toFixed(2).padStart(7)} TFLOP/s ${alone.ms.toFixed(3).padStart(9)} ms (${alone.spread})`,
          );
        } catch (e) {
          console.log(`  ${path.padEnd(16)} dense FAILED: ${e instanceof Error ? e.message : String(e)}`);
        } finally {
          run?.destroy();
        }
        for (const mix of mixes) {
          const vp: VarlenProblem = {
            base: { hq: H, hk: H, d, dv: d, causal, dtype: dense.dtype },
            cuSeqlensQ: seqOffsets(mix.lengths),
            cuSeqlensK: seqOffsets(mix.lengths),
          };
          const flops = mix.lengths.reduce((a, n) => a + nominalFlops(sequenceProblem(vp.base, n, n)), 0);
          let vr: VarlenGpuRun | undefined;
          try {
            if (failed.has(path)) throw new Error(`skipped: the ${path} varlen self-test failed`);
            vr = await VarlenGpuRun.create(ctx, vp, { path });
            await vr.fillRandom(3);
            const t = await time(vr, reps);
            const err = await checkVarlenRows(vr);
            if (!(err < (pathElem(path) === 'f16' ? 3e-3 : 1e-4))) worst = Infinity;
            const tf = flops / (t.ms * 1e9);
            const ratio = denseTflops ? `  ${(tf / denseTflops).toFixed(2)}× dense` : '';
            console.log(
              `  ${path.padEnd(16)} varlen ${mix.name.padEnd(34)} ${tf.toFixed(2).padStart(7)} TFLOP/s ${t.ms.toFixed(3).padStart(9)} ms (${t.spread})${ratio}  maxerr ${err.toExponential(1)}   [${vr.config}]`,
            );
          } catch (e) {
            console.log(`  ${path.padEnd(16)} varlen ${mix.name} FAILED: ${e instanceof Error ? e.message : String(e)}`);
            worst = Infinity;
          } finally {
            vr?.destroy();
          }
        }
      }
    }
  }
  return worst < 1e-4 ? 0 : 1;
}
