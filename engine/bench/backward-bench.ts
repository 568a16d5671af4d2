// `npm run bench:webgpu -- --pass backward`: the WebGPU backward, f32 (backward-kernels.ts)
// and f16 subgroup matrices (backward-matrix-kernel.ts), on B = 4, H = 16, N = 4096 and 8192, d = 64 and 128, causal and not, in TFLOP/s by the
// FlashAttention convention (2.5 × the forward's 4·B·H·N²·d, halved when causal), beside
// PyTorch's SDPA FLASH backward (FA2's CUDA kernel, fp16) timed on the same GPU in the same
// run when PyTorch is importable, with the ratio.
//
// Order: self-test of every variant against the float64 reference gradients; the anchor;
// then each shape: forward on the GPU for O and LSE, one cold backward, `reps` timed ones
// (median), and three sampled dQ rows recomputed in float64 from the inputs. A shape whose
// estimated time (from the rate of the shapes before it) passes --max-shape-s is reported
// as not run, with the estimate, rather than holding the GPU for minutes.

import type { AttentionProblem } from '../core/problem.ts';
import { checkBackward, runGpuBackward, type BackwardCheck } from '../webgpu/backward-checks.ts';
import type { MatrixBackwardPrefs } from '../webgpu/backward-matrix-kernel.ts';
import { studyPrefs, type BenchBackwardPrefs } from './backward-studies.ts';
import { runPythonAnchor } from './python-anchor.ts';
import { backwardFlops, type BackwardPath } from '../webgpu/backward-run.ts';
import { KERNEL_VARIANTS } from '../webgpu/variants.ts';
import type { WebGpuContext } from '../webgpu/device.ts';
import { sampledDqError } from '../webgpu/backward-row-check.ts';
import { sampleSites } from '../webgpu/row-check.ts';

export interface BackwardBenchOptions {
  quick: boolean;
  reps: number;
  ns: number[];
  ds: number[];
  maxShapeS: number;
  anchor: boolean;
  /** Paths to run (those the adapter lacks are named and skipped). */
  paths: BackwardPath[];
  /** flash-matrix tiles to self-test and time, each its own row; empty: the default tile. */
  matrixPrefs: BenchBackwardPrefs[];
}

/** Standard normal values from a fixed-seed generator (the shapes are too large for engine/core/inputs' per-element streams). */
function normals(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = (seed * 2654435761) >>> 0 || 1;
  const u = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return (s + 0.5) / 4294967296;
  };
  for (let i = 0; i < n; i += 2) {
    const r = Math.sqrt(-2 * Math.log(u()));
    const t = 2 * Math.PI * u();
    out[i] = r * Math.cos(t);
    if (i + 1 < n) out[i + 1] = r * Math.sin(t);
  }
  return out;
}

function anchorTimes(
  shapes: { key: string; b: number; h: number; n: number; d: number; causal: boolean }[],
  reps: number,
): { note: string; ms: Map<string, number | string> } {
  const { note, lines } = runPythonAnchor('sdpa-backward-anchor.py', { reps, shapes }, 600_000);
  return { note, ms: new Map(lines.map((x) => [x.key, x.error ?? x.ms!])) };
}

/** How far a path's gradients may sit from float64 on the self-test variants, relative to each gradient's largest |value|. */
const SELF_TEST_TOLERANCE: Record<BackwardPath, { abs?: number; rel?: number }> = {
  'flash-f32': { abs: 1e-4 },
  // f16 Q, K, V, dO, P and dS (FA2's operand precisions): errors of a few f16 ulps of the largest gradient.
  'flash-matrix': { rel: 2e-3 },
};

function selfTestPasses(path: BackwardPath, c: BackwardCheck): boolean {
  const t = SELF_TEST_TOLERANCE[path];
  if (c.error) return false;
  const errs = [c.maxErrDq / (t.rel ? c.scaleDq : 1), c.maxErrDk / (t.rel ? c.scaleDk : 1), c.maxErrDv / (t.rel ? c.scaleDv : 1)];
  return errs.every((e) => e <= (t.rel ?? t.abs!));
}

export async function backwardBench(ctx: WebGpuContext, o: BackwardBenchOptions): Promise<number> {
  const paths = o.paths.filter((p) => ctx.paths.includes(p));
  const skipped = o.paths.filter((p) => !ctx.paths.includes(p));
  console.log('WebGPU backward. flash-f32: D, then dK/dV with keys in registers, then dQ with rows in registers (no atomics).');
  console.log('flash-matrix: f16 subgroup matrices, K/V outer; dK, dV in registers; dQ added into a fixed-point i32 accumulator.');
  if (skipped.length) console.log(`not offered by this adapter: ${skipped.join(', ')}`);
  console.log('FLOPs = 2.5 × 4·B·H·N²·d (halved when causal), the FlashAttention convention\n');
  type Config = { path: BackwardPath; prefs: MatrixBackwardPrefs; study?: string; label: string };
  const configs: Config[] = paths.flatMap((path): Config[] =>
    path === 'flash-matrix' && o.matrixPrefs.length
      ? o.matrixPrefs.map((prefs) => ({
          path,
          prefs: studyPrefs(prefs),
          study: prefs.study,
          label: `flash-matrix ${prefs.warps}×${prefs.bm}${prefs.stagger === false ? ' unstaggered' : ''}${prefs.overlapAdds ? ' overlapped adds' : prefs.overlapAdds === false ? ' adds between barriers' : ''}${prefs.study ? ` ${prefs.study}` : ''}`,
        }))
      : [{ path, prefs: {}, label: path }],
  );
  const passing: typeof configs = [];
  for (const cfg of configs) {
    if (cfg.study) {
      console.log(`${cfg.label}: a study (${cfg.study}), wrong dQ by design: timed without the self-test\n`);
      passing.push(cfg);
      continue;
    }
    const checks = await checkBackward(ctx, KERNEL_VARIANTS, cfg.path, cfg.prefs);
    let ok = true;
    for (const c of checks) {
      const pass = selfTestPasses(cfg.path, c);
      ok &&= pass;
      const rel = (e: number, s: number) => `${e.toExponential(1)} (${(e / (s || 1)).toExponential(1)} of max)`;
      console.log(
        `self-test ${cfg.label.padEnd(18)} ${c.variant.padEnd(16)} ${c.error ? `FAILED: ${c.error}` : `max |Δ| dQ ${rel(c.maxErrDq, c.scaleDq)}, dK ${rel(c.maxErrDk, c.scaleDk)}, dV ${rel(c.maxErrDv, c.scaleDv)}${pass ? '' : '  OUT OF TOLERANCE'}`}`,
      );
    }
    console.log(`self-test ${cfg.label}: ${ok ? 'every variant matches the float64 reference gradients' : 'MISMATCH — not timed'}\n`);
    if (ok) passing.push(cfg);
  }
  if (passing.length === 0) return 1;
  const ns = o.quick ? [256] : o.ns;
  const ds = o.quick ? [32] : o.ds;
  const b = o.quick ? 1 : 4;
  const h = o.quick ? 2 : 16;
  const key = (n: number, d: number, causal: boolean) => `N${n} d${d}${causal ? ' causal' : ''}`;
  const shapes = ds.flatMap((d) => [false, true].flatMap((causal) => ns.map((n) => ({ key: key(n, d, causal), b, h, n, d, causal }))));
  const anchor =
    o.anchor && !o.quick
      ? anchorTimes(shapes, o.reps * 4)
      : { note: 'no CUDA anchor (--no-anchor or --quick)', ms: new Map<string, number | string>() };
  console.log(`anchor: ${anchor.note}`);
  const rate = new Map<string, number>(); // FLOP/ms of each config's shapes so far, for the estimate
  const rows: string[] = [];
  for (const sh of shapes) {
    const p: AttentionProblem = { batch: b, hq: h, hk: h, nq: sh.n, nk: sh.n, d: sh.d, dv: sh.d, causal: sh.causal, dtype: 'fp32' };
    const flops = backwardFlops(p);
    const a = anchor.ms.get(sh.key);
    const aTf = typeof a === 'number' ? flops / (a * 1e9) : undefined;
    const anchorCell = typeof a === 'number' ? `${aTf!.toFixed(1)}` : a === undefined ? '–' : `failed: ${a}`;
    const size = b * h * sh.n * sh.d;
    const x = { q: normals(size, 1), k: normals(size, 2), v: normals(size, 3) };
    const dO = normals(size, 4);
    for (const cfg of passing) {
      const r0 = rate.get(cfg.label) ?? 0;
      const estS = r0 > 0 ? (flops / r0 / 1000) * (2 + o.reps) : 0;
      if (estS > o.maxShapeS) {
        rows.push(
          `| ${sh.key} | ${cfg.label} | not run: about ${estS.toFixed(0)} s at the rate measured so far (--max-shape-s ${o.maxShapeS}) | ${anchorCell} | – |`,
        );
        continue;
      }
      try {
        const r = await runGpuBackward(ctx, p, x, dO, o.reps, cfg.path, cfg.prefs);
        rate.set(cfg.label, flops / r.ms);
        const tf = flops / (r.ms * 1e9);
        const err = sampledDqError(p, x, dO, r.dq, sampleSites(p, 3));
        const parts = r.kernels.map((k) => `${k.name} ${k.ms.toFixed(3)}`).join(', ');
        console.log(
          `${sh.key.padEnd(18)} ${cfg.label.padEnd(18)} ${r.ms.toFixed(3)} ms  ${tf.toFixed(2)} TFLOP/s  (${parts} ms; ${r.kernels[0]?.clock ?? 'wall'} clock)  sampled dQ max |Δ| ${err.toExponential(1)}  [${r.config}]`,
        );
        rows.push(
          `| ${sh.key} | ${cfg.label} | ${tf.toFixed(2)} (${r.ms.toFixed(2)} ms) | ${anchorCell} | ${aTf ? (tf / aTf).toFixed(3) : '–'} |`,
        );
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        console.log(`${sh.key.padEnd(18)} ${cfg.label.padEnd(18)} FAILED: ${msg}`);
        rows.push(`| ${sh.key} | ${cfg.label} | failed: ${msg.slice(0, 120)} | ${anchorCell} | – |`);
      }
    }
  }
  console.log(`\nbackward, B=${b} H=${h}, TFLOP/s (WebGPU vs SDPA FLASH backward fp16, same GPU, same run):`);
  console.log('| shape | WebGPU path | WebGPU backward | SDPA FLASH backward | ratio |\n|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  return 0;
}
