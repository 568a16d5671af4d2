// Masks on the WebGPU flash paths against the float64 reference: every preset of
// engine/core/mask-presets.ts and seeded random mask_mod / score_mod texts, each run by the
// kernel the problem picks (row kernel at d ≤ 64, 4×4-tiled above; subgroup matrices on
// flash-matrix), dense and block-sparse.

import { randomInputs } from '../core/inputs.ts';
import { MASK_PRESETS, buildPreset } from '../core/mask-presets.ts';
import type { MaskSpec } from '../core/mask-spec.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { mulberry32 } from '../core/random.ts';
import { referenceAttention } from '../core/reference.ts';
import type { WebGpuContext, WebGpuPath } from './device.ts';
import { AttentionRun } from './backend.ts';

export interface MaskCase {
  name: string;
  mask: MaskSpec;
}

/** Every preset at its defaults for a problem of these sizes. */
export function presetCases(hq: number, nq: number, nk: number): MaskCase[] {
  return MASK_PRESETS.map((preset) => {
    const built = buildPreset(preset, [], { hq, nq, nk });
    const mask: MaskSpec = preset.kind === 'mask_mod' ? { maskMod: built.text } : { scoreMod: built.text };
    if (built.aux) mask.aux = built.aux;
    return { name: preset.id, mask };
  });
}

/**
 * A random mask_mod over index arithmetic, comparisons, boolean logic, min/max/abs, floor
 * division, remainders, `where` and an aux array read: the shapes the language allows, seeded.
 */
export function randomMaskText(rng: () => number, depth = 3): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
  const small = () => String(1 + Math.floor(rng() * 40));
  const index = (d: number): string => {
    if (d <= 0) return pick(['q_idx', 'kv_idx', small(), 'h', 'b', 'nq', 'nk']);
    switch (Math.floor(rng() * 7)) {
      case 0:
        return `(${index(d - 1)} ${pick(['+', '-', '*'])} ${index(d - 1)})`;
      case 1:
        return `floor(${index(d - 1)} / ${small()})`;
      case 2:
        return `(${index(d - 1)} % ${small()})`;
      case 3:
        return `${pick(['min', 'max'])}(${index(d - 1)}, ${index(d - 1)})`;
      case 4:
        return `abs(${index(d - 1)})`;
      case 5:
        return `tag[${pick(['q_idx', 'kv_idx'])}]`;
      default:
        return pick(['q_idx', 'kv_idx', small()]);
    }
  };
  const cond = (d: number): string => {
    if (d <= 0 || rng() < 0.4) return `${index(2)} ${pick(['<', '<=', '>', '>=', '==', '!='])} ${index(2)}`;
    switch (Math.floor(rng() * 4)) {
      case 0:
        return `(${cond(d - 1)} && ${cond(d - 1)})`;
      case 1:
        return `(${cond(d - 1)} || ${cond(d - 1)})`;
      case 2:
        return `!(${cond(d - 1)})`;
      default:
        return `where(${cond(d - 1)}, ${cond(d - 1)}, ${cond(d - 1)})`;
    }
  };
  return cond(depth);
}

/** A random score_mod: the score bent by index terms, tanh, exp of a small term, a bias table. */
export function randomScoreText(rng: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
  const c = (1 + Math.floor(rng() * 9)).toString();
  return pick([
    `score - 0.0${c} * abs(q_idx - kv_idx)`,
    `${c} * tanh(score / ${c})`,
    `score + bias[kv_idx % 16] * where(q_idx >= kv_idx, 1, -0.5)`,
    `score * (1 + 0.1 * h) - log(1 + abs(q_idx - kv_idx))`,
    `where(kv_idx % ${c} == 0, score + 1.5, score) - exp(-0.1 * ${c})`,
    `max(score, -${c}) + floor((q_idx + 1) / ${c}) * 0.01`,
  ]);
}

/** Random masks with their aux arrays (tag: a per-token int array; bias: a float table). */
export function randomCases(seed: number, count: number, nk: number): MaskCase[] {
  const rng = mulberry32(seed);
  const tag = Array.from({ length: Math.max(nk, 1) }, () => Math.floor(rng() * 4));
  const bias = Array.from({ length: 16 }, () => Math.round((rng() * 4 - 2) * 1000) / 1000);
  const out: MaskCase[] = [];
  for (let i = 0; i < count; i++) {
    const mask: MaskSpec = { maskMod: randomMaskText(rng), aux: { tag, bias } };
    if (i % 2 === 1) mask.scoreMod = randomScoreText(rng);
    out.push({ name: `random ${i}`, mask });
  }
  return out;
}

export interface MaskCheck {
  name: string;
  path: WebGpuPath;
  sparse: boolean;
  maxErr: number;
  ok: boolean;
  detail: string;
}

/** Largest |Δ| over O and finite LSE, and whether ±inf LSE (fully masked rows) agree. */
function compare(o: Float32Array, lse: Float32Array, ref: { o: Float64Array; lse: Float64Array }): { err: number; lseAgrees: boolean } {
  let err = 0;
  for (let i = 0; i < o.length; i++) err = Math.max(err, Math.abs(o[i] - ref.o[i]) || (Number.isNaN(o[i]) ? Infinity : 0));
  let lseAgrees = true;
  for (let i = 0; i < lse.length; i++) {
    const a = lse[i];
    const b = ref.lse[i];
    if (!Number.isFinite(b) || !Number.isFinite(a)) {
      if (a !== b) lseAgrees = false;
    } else err = Math.max(err, Math.abs(a - b));
  }
  return { err, lseAgrees };
}

/**
 * Runs each case on each path (dense, then block-sparse) and compares with float64. `tol`: the
 * largest |Δ| accepted (f32 paths ~1e-4, f16 storage ~1e-2 at these sizes).
 */
export async function runMaskChecks(
  ctx: WebGpuContext,
  base: Omit<AttentionProblem, 'mask'>,
  cases: readonly MaskCase[],
  paths: readonly { path: WebGpuPath; tol: number }[],
  seed = 5,
  log: (c: MaskCheck) => void = () => {},
): Promise<MaskCheck[]> {
  const out: MaskCheck[] = [];
  for (const c of cases) {
    const p: AttentionProblem = { ...base, mask: c.mask };
    const x = randomInputs(p, { seed });
    const ref = referenceAttention(p, x);
    for (const { path, tol } of paths) {
      if (!ctx.paths.includes(path)) continue;
      for (const sparse of [false, true]) {
        const run = await AttentionRun.create(ctx, p, { path, blockSparse: sparse });
        try {
          run.upload(x);
          await run.execute();
          const r = await run.read();
          const { err, lseAgrees } = compare(r.o, r.lse, ref);
          const ok = err <= tol && lseAgrees;
          const check: MaskCheck = {
            name: c.name,
            path,
            sparse,
            maxErr: err,
            ok,
            detail: `${ok ? 'ok' : 'FAIL'} ${path}${sparse ? ' block-sparse' : ''} ${c.name}: max |Δ| ${err.toExponential(2)}${lseAgrees ? '' : ', fully masked rows disagree'} (${[c.mask.maskMod, c.mask.scoreMod].filter(Boolean).join(' ; ')})`,
          };
          out.push(check);
          log(check);
        } finally {
          run.destroy();
        }
      }
    }
  }
  return out;
}
