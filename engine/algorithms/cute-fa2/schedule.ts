// The CuTe FlashAttention-2 kernel of github.com/66RING/tiny-flash-attention (flash_attention_cutlass/) on SM80 (and run as-is on later GPUs, where
// it keeps using mma.sync). Grid: (Nq / block_m, B·H); 4 warps, each with block_m / 4 Q
// rows; Q, K and V tiles in SMEM with one buffer each, filled by cp.async; V_j loads while
// Q·K_jᵀ runs and K_{j+1} while P·V_j runs; causal K/V blocks past the diagonal are never
// visited (the loop ends early) and the diagonal block is masked inside.

import type { GpuSpec } from '../../hw/gpus/index.ts';
import {
  ceilDiv,
  emptySheet,
  finishSheet,
  regAlloc,
  visibleKvRange,
  ioBytes,
  requireHalf,
  type CtaWork,
  type HwAlgorithm,
  type ProblemShape,
} from '../../hw/model.ts';
import {
  SOFTMAX_FMA_OPS,
  buildWarpTiled,
  mmaSyncRate,
  warpTiledGeometry,
  warpTiledSmem,
  type WarpTiledConfig,
} from '../../hw/schedules/warp-tiled.ts';
import { CUTE_FA2_TILE } from './tile.ts';

/**
 * Calibration: FA2 forward on A100 reaches ~230 TFLOP/s at d = 128 (FA2 paper, Fig. 4)
 * and the H200 anchors in shared/gpu/README.md (SDPA's FA2 kernels, 352 TFLOP/s at
 * d = 128). The rate mma.sync reaches inside this loop, ldmatrix traffic included.
 */
export const MMA_SYNC_EFFICIENCY = 0.8;

/** The stepper's tile (tile.ts): upstream's SM80 forward runs one tile at every head dim. */
export function cuteFa2Tiles(): { blockM: number; blockN: number } {
  return { blockM: CUTE_FA2_TILE.blockM, blockN: CUTE_FA2_TILE.blockN };
}

export function cuteFa2Config(gpu: GpuSpec, shape: ProblemShape): WarpTiledConfig {
  const t = cuteFa2Tiles();
  // Accumulators per thread: S (rows·block_n fp32 over 32 lanes), O (rows·dv), plus P and fragments.
  const rows = t.blockM / CUTE_FA2_TILE.warps;
  const regs = Math.min(255, regAlloc(((rows * t.blockN + rows * shape.dv) / 32) * 1.5 + 40));
  return {
    ...t,
    warps: CUTE_FA2_TILE.warps,
    registers: regs,
    kvStages: CUTE_FA2_TILE.kvStages,
    copyUnit: 'cpasync',
    tensorFlopsPerClk: mmaSyncRate(gpu, shape),
    mmaEfficiency: MMA_SYNC_EFFICIENCY,
    softmaxOps: SOFTMAX_FMA_OPS,
    writesPartial: false,
    splits: 1,
    label: 'CuTe FA2 warp',
  };
}

function resources(gpu: GpuSpec, shape: ProblemShape) {
  const cfg = cuteFa2Config(gpu, shape);
  const sheet = emptySheet('cute-fa2', gpu, cfg.blockM, cfg.blockN);
  warpTiledSmem(sheet, shape, cfg);
  requireHalf(sheet, shape, 'the CuTe FA2 kernel');
  if (gpu.sm > 80)
    sheet.notes.push(
      `Runs on SM${gpu.sm} with SM80 instructions: mma.sync at ${Math.round(gpu.mmaSyncFraction * 100)}% of the native tensor rate.`,
    );
  return finishSheet(sheet, gpu);
}

function grid(shape: ProblemShape): CtaWork[] {
  const { blockM, blockN } = cuteFa2Tiles();
  const out: CtaWork[] = [];
  for (let b = 0; b < shape.batch; b++)
    for (let h = 0; h < shape.hq; h++)
      for (let i = 0; i < ceilDiv(shape.nq, blockM); i++) {
        const [kvFrom, kvTo] = visibleKvRange(shape, i * blockM, Math.min(shape.nq, (i + 1) * blockM), blockN);
        out.push({ b, h, qBlock: i, kvFrom, kvTo, reverse: false, split: 0 });
      }
  return out;
}

export const cuteFa2Hw: HwAlgorithm = {
  id: 'cute-fa2',
  name: 'CuTe FlashAttention-2 (SM80 cp.async pipeline)',
  arch: [80, 89, 90, 100],
  switches: {},
  geometry: warpTiledGeometry,
  resources: (gpu, shape) => resources(gpu, shape),
  grid: (_gpu, shape) => grid(shape),
  build: (k, ctx, work) => buildWarpTiled(k, ctx, work, cuteFa2Config(ctx.gpu, ctx.shape), resources(ctx.gpu, ctx.shape)),
  hbmBytes: ioBytes,
};
