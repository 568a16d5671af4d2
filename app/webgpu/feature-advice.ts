// What a missing adapter feature costs on the WebGPU panel, and how a person gets it in
// Chromium; plus which offered kernel path runs fastest, so the panel starts on it.

import { PATH_LABELS, type WebGpuPath } from '../../engine/api.ts';

/** Forward paths, fastest first (BENCHMARKS.md, H200: flash-matrix ≈ 5× flash-subgroups ≥ flash-f32). */
export const FORWARD_SPEED_ORDER: readonly WebGpuPath[] = ['flash-matrix', 'flash-subgroups', 'flash-f16', 'flash-f32'];

/** The fastest forward path the adapter offers (flash-f32 is always offered). */
export function fastestPath(paths: readonly WebGpuPath[]): WebGpuPath {
  return FORWARD_SPEED_ORDER.find((p) => paths.includes(p)) ?? 'flash-f32';
}

export interface FeatureAdvice {
  feature: string;
  /** What the panel loses without it. */
  loses: string;
  /** How it is obtained in Chromium: "Needs …" for hardware, "Enable with …" for a switch. */
  how: string;
}

const pathList = (ps: WebGpuPath[]) => `${ps.map((p) => `“${PATH_LABELS[p]}”`).join(' or ')} kernel`;

/**
 * One line per feature a faster path (or the GPU clock) needs that the adapter lacks.
 * `matrixF16` = the adapter lists an f16 × f16 → f32 subgroup-matrix shape.
 */
export function missingFeatureAdvice(features: readonly string[], matrixF16: boolean): FeatureAdvice[] {
  const has = (f: string) => features.includes(f);
  const out: FeatureAdvice[] = [];
  if (!has('chromium-experimental-subgroup-matrix')) {
    out.push({
      feature: 'chromium-experimental-subgroup-matrix',
      loses: `no ${pathList(['flash-matrix'])}, the fastest one`,
      how: 'Enable with --enable-unsafe-webgpu (chrome://flags/#enable-unsafe-webgpu, "Enable Unsafe WebGPU"), which turns on Chromium\'s experimental WebGPU features; it also needs a GPU and driver that offer subgroup matrices',
    });
  } else if (!matrixF16) {
    out.push({
      feature: 'chromium-experimental-subgroup-matrix (f16 × f16 → f32 shape)',
      loses: `no ${pathList(['flash-matrix'])}: the adapter offers subgroup matrices, but none that multiply f16 into f32`,
      how: 'Needs a GPU and driver with f16 subgroup matrices that accumulate in f32; no flag adds one',
    });
  }
  if (!has('shader-f16')) {
    out.push({
      feature: 'shader-f16',
      loses: `no ${pathList(['flash-f16', 'flash-matrix'])}`,
      how: 'Needs a GPU and driver with 16-bit float shader arithmetic; Chromium 120 and later exposes it without a flag wherever the hardware has it',
    });
  }
  if (!has('subgroups')) {
    out.push({
      feature: 'subgroups',
      loses: `no ${pathList(['flash-subgroups'])}`,
      how: 'Needs a GPU and driver with subgroup operations; Chromium 134 and later exposes it without a flag wherever the hardware has it',
    });
  }
  if (!has('timestamp-query')) {
    out.push({
      feature: 'timestamp-query',
      loses:
        'no per-kernel GPU times: timings fall back to the wall clock around the whole queue submission, launch and synchronization included',
      how: 'Needs a GPU and driver with timestamp queries; Chromium 121 and later exposes it without a flag wherever the hardware has it',
    });
  }
  return out;
}
