// `npm run bench:webgpu -- --pass backward`: the WebGPU backward (backward-kernels.ts, f32)
// on B = 4, H = 16, N = 4096 and 8192, d = 64 and 128, causal and not, in TFLOP/s by the
// FlashAttention convention (2.5 × the forward's 4·B·H·N²·d, halved when causal), beside
// PyTorch's SDPA FLASH backward (FA2's CUDA kernel, fp16) timed on the same GPU in the same
// run when PyTorch is importable, with the ratio.
//
// Order: self-test of every variant against the float64 reference gradients; the anchor;
// then each shape: forward on the GPU for O and LSE, one cold backward, `reps` timed ones
// (median), and two sampled dQ rows recomputed in float64 from the inputs. A shape whose
// estimated time (from the rate of the shapes before it) passes --max-shape-s is reported
// as not run, with the estimate, rather than holding the GPU for minutes.

import { spawnSync } from 'node:child_process';
import type { AttentionProblem } from '../problem.ts';
import { checkBackward, runGpuBackward } from '../webgpu/backward-checks.ts';
import { backwardFlops } from '../webgpu/backward-run.ts';
import type { WebGpuContext } from '../webgpu/device.ts';

export interface BackwardBenchOptions {
  quick: boolean;
  reps: number;
  ns: number[];
  ds: number[];
  maxShapeS: number;
  anchor: boolean;
}

/** Standard normal values from a fixed-seed generator (the shapes are too large for engine/inputs' per-element streams). */
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

/** Max |GPU dQ − float64| over rows `rows` of head (0, 0): each row's softmax, D and dQ from the inputs alone. */
function sampledDqError(p: AttentionProblem, x: { q: Float32Array; k: Float32Array; v: Float32Array; dO: Float32Array }, dq: Float32Array, rows: number[]): number {
  const { nk, d, dv } = p;
  const scale = 1 / Math.sqrt(d);
  let worst = 0;
  for (const i of rows) {
    const hi = p.causal ? Math.min(nk, i + (nk - p.nq) + 1) : nk;
    const s = new Float64Array(hi);
    let m = -Infinity;
    for (let j = 0; j < hi; j++) {
      let a = 0;
      for (let e = 0; e < d; e++) a += x.q[i * d + e] * x.k[j * d + e];
      s[j] = a * scale;
      if (s[j] > m) m = s[j];
    }
    let l = 0;
    for (let j = 0; j < hi; j++) l += Math.exp(s[j] - m);
    const o = new Float64Array(dv);
    const pr = new Float64Array(hi);
    for (let j = 0; j < hi; j++) {
      pr[j] = Math.exp(s[j] - m) / l;
      for (let e = 0; e < dv; e++) o[e] += pr[j] * x.v[j * dv + e];
    }
    let D = 0;
    for (let e = 0; e < dv; e++) D += x.dO[i * dv + e] * o[e];
    const ref = new Float64Array(d);
    for (let j = 0; j < hi; j++) {
      let dp = 0;
      for (let e = 0; e < dv; e++) dp += x.dO[i * dv + e] * x.v[j * dv + e];
      const ds = pr[j] * (dp - D) * scale;
      for (let e = 0; e < d; e++) ref[e] += ds * x.k[j * d + e];
    }
    for (let e = 0; e < d; e++) worst = Math.max(worst, Math.abs(dq[i * d + e] - ref[e]));
  }
  return worst;
}

const ANCHOR_PROGRAM = String.raw`
import json, os, sys
try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
except Exception as e:
    print(json.dumps({"error": "PyTorch is not importable: %s" % e})); sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"error": "PyTorch sees no CUDA device"})); sys.exit(0)
spec = json.loads(os.environ["FLASHSCOPE_ANCHOR_SPEC"])
dev = torch.device("cuda")
print(json.dumps({"note": "PyTorch %s, %s, SDPA FLASH backward, fp16" % (torch.__version__, torch.cuda.get_device_name(0))}), flush=True)
for s in spec["shapes"]:
    try:
        g = torch.Generator(device=dev).manual_seed(7)
        mk = lambda: torch.randn(s["b"], s["h"], s["n"], s["d"], device=dev, dtype=torch.float16, generator=g).requires_grad_(True)
        q, k, v = mk(), mk(), mk()
        do = torch.randn(s["b"], s["h"], s["n"], s["d"], device=dev, dtype=torch.float16, generator=g)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])
            run = lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
            run(); torch.cuda.synchronize()
            t0 = torch.cuda.Event(enable_timing=True); t1 = torch.cuda.Event(enable_timing=True)
            t0.record(); n = 0
            while True:
                run(); n += 1
                t1.record(); t1.synchronize()
                if n >= 3 and t0.elapsed_time(t1) > 400: break
            times = []
            for _ in range(spec["reps"]):
                a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
                a.record(); run(); b.record(); b.synchronize()
                times.append(a.elapsed_time(b))
        times.sort()
        print(json.dumps({"key": s["key"], "ms": times[len(times) // 2]}), flush=True)
    except Exception as e:
        print(json.dumps({"key": s["key"], "error": str(e).splitlines()[0][:300]}), flush=True)
    finally:
        q = k = v = out = do = None
        torch.cuda.empty_cache()
`;

function anchorTimes(shapes: { key: string; b: number; h: number; n: number; d: number; causal: boolean }[], reps: number): { note: string; ms: Map<string, number | string> } {
  const ms = new Map<string, number | string>();
  const python = process.env.FLASHSCOPE_PYTHON ?? 'python3';
  const run = spawnSync(python, ['-c', ANCHOR_PROGRAM], { encoding: 'utf8', maxBuffer: 1 << 24, timeout: 600_000, env: { ...process.env, FLASHSCOPE_ANCHOR_SPEC: JSON.stringify({ reps, shapes }) } });
  if (run.error) return { note: `no CUDA anchor: could not start ${python} (${run.error.message})`, ms };
  let note = '';
  for (const line of run.stdout.split('\n')) {
    if (!line.trim().startsWith('{')) continue;
    const x = JSON.parse(line) as { error?: string; note?: string; key?: string; ms?: number };
    if (x.key === undefined) {
      if (x.error) return { note: `no CUDA anchor: ${x.error}`, ms };
      if (x.note) note = x.note;
    } else ms.set(x.key, x.error ?? x.ms!);
  }
  return { note: note || `no CUDA anchor: ${python} exited with ${run.status}`, ms };
}

export async function backwardBench(ctx: WebGpuContext, o: BackwardBenchOptions): Promise<number> {
  console.log('WebGPU backward (f32: D, then dK/dV with keys in registers, then dQ with rows in registers; no atomics)');
  console.log('FLOPs = 2.5 × 4·B·H·N²·d (halved when causal), the FlashAttention convention\n');
  const checks = await checkBackward(ctx);
  let worst = 0;
  for (const c of checks) {
    const e = Math.max(c.maxErrDq, c.maxErrDk, c.maxErrDv);
    worst = Math.max(worst, e);
    console.log(`self-test ${c.variant.padEnd(16)} ${c.error ? `FAILED: ${c.error}` : `max |Δ| dQ ${c.maxErrDq.toExponential(1)}, dK ${c.maxErrDk.toExponential(1)}, dV ${c.maxErrDv.toExponential(1)}`}`);
  }
  const ok = worst < 1e-4;
  console.log(`self-test: ${ok ? 'every variant matches the float64 reference gradients' : 'MISMATCH — no timings'}\n`);
  if (!ok) return 1;
  const ns = o.quick ? [256] : o.ns;
  const ds = o.quick ? [32] : o.ds;
  const b = o.quick ? 1 : 4;
  const h = o.quick ? 2 : 16;
  const key = (n: number, d: number, causal: boolean) => `N${n} d${d}${causal ? ' causal' : ''}`;
  const shapes = ds.flatMap((d) => [false, true].flatMap((causal) => ns.map((n) => ({ key: key(n, d, causal), b, h, n, d, causal }))));
  const anchor = o.anchor && !o.quick ? anchorTimes(shapes, o.reps * 4) : { note: 'no CUDA anchor (--no-anchor or --quick)', ms: new Map<string, number | string>() };
  console.log(`anchor: ${anchor.note}`);
  let rate = 0; // FLOP/ms of the shapes so far, for the estimate
  const rows: string[] = [];
  for (const sh of shapes) {
    const p: AttentionProblem = { batch: b, hq: h, hk: h, nq: sh.n, nk: sh.n, d: sh.d, dv: sh.d, causal: sh.causal, dtype: 'fp32' };
    const flops = backwardFlops(p);
    const a = anchor.ms.get(sh.key);
    const aTf = typeof a === 'number' ? flops / (a * 1e9) : undefined;
    const anchorCell = typeof a === 'number' ? `${aTf!.toFixed(1)}` : a === undefined ? '–' : `failed: ${a}`;
    const estS = rate > 0 ? (flops / rate / 1000) * (2 + o.reps) : 0;
    if (estS > o.maxShapeS) {
      rows.push(`| ${sh.key} | not run: about ${estS.toFixed(0)} s at the rate measured so far (--max-shape-s ${o.maxShapeS}) | ${anchorCell} | – |`);
      continue;
    }
    const size = b * h * sh.n * sh.d;
    const x = { q: normals(size, 1), k: normals(size, 2), v: normals(size, 3) };
    const dO = normals(size, 4);
    const r = await runGpuBackward(ctx, p, x, dO, o.reps);
    rate = flops / r.ms;
    const tf = flops / (r.ms * 1e9);
    const err = sampledDqError(p, { ...x, dO }, r.dq, [0, Math.floor(sh.n / 2), sh.n - 1]);
    const parts = r.kernels.map((k) => `${k.name} ${k.ms.toFixed(1)}`).join(', ');
    console.log(`${sh.key.padEnd(18)} ${r.ms.toFixed(2)} ms  ${tf.toFixed(2)} TFLOP/s  (${parts} ms; ${r.kernels[0]?.clock ?? 'wall'} clock)  sampled dQ max |Δ| ${err.toExponential(1)}`);
    rows.push(`| ${sh.key} | ${tf.toFixed(2)} (${r.ms.toFixed(1)} ms) | ${anchorCell} | ${aTf ? (tf / aTf).toFixed(3) : '–'} |`);
  }
  console.log(`\nbackward, B=${b} H=${h}, TFLOP/s (WebGPU f32 vs SDPA FLASH backward fp16, same GPU, same run):`);
  console.log('| shape | WebGPU f32 backward | SDPA FLASH backward | ratio |\n|---|---|---|---|');
  for (const r of rows) console.log(r);
  return 0;
}
