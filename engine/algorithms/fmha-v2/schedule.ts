// TensorRT-LLM's fmha_v2 flash-attention kernel on SM89 (TensorRT-LLM cpp/kernels/fmha_v2: the
// fmha_v2_flash_attention_fp16_128_128_S_qkv_16_sm89 build, "nl_tiled").
// One CTA per (batch = blockIdx.z, head = blockIdx.y, Q tile = blockIdx.x); 4 warps split
// the 128 Q rows (wm = 4, wn = 1); Q, K, V come from the packed QKV tensor [B, S, 3, H, D]
// by LDGSTS (cp.async) with row/column predicates; K/V are double-buffered (the smem tile's
// move_to_next_write_buffer); softmax keeps the global max/sum per row and the running
// normalizer of acc_o. The build defines HALF_ACCUMULATION_FOR_FLASH_ATTENTION: the
// MMAs accumulate in fp16, which runs at twice the fp32-accumulate rate on GeForce Ada.

import type { GpuSpec } from '../../hw/gpus/index.ts';
import {
  ceilDiv,
  elemBytes,
  emptySheet,
  finishSheet,
  regAlloc,
  visibleKvRange,
  ioBytes,
  requireHalf,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
  STAGES_SWITCH,
} from '../../hw/model.ts';
import { buildWarpTiled, mmaSyncRate, warpTiledGeometry, warpTiledSmem, type WarpTiledConfig } from '../../hw/schedules/warp-tiled.ts';

/**
 * Calibration: a recorded fmha_exe run of that build (B = 4, H = 16, S = 1024, d = 16, fp16, RTX 4060:
 * 411.6 µs, 10.43 TFLOP/s). At d = 16 the MMAs are tiny and the per-element softmax
 * dominates; the build orders the row sums like the reference code
 * (USE_SAME_SUM_ORDER_IN_SOFTMAX_AS_REF_CODE: serial adds) and converts through the
 * I2F/F2I emulation tricks, so each S element costs far more FMA-pipe work than FA2's
 * 3.5 operations. That figure is a single run with no warm-up, so this count also
 * absorbs first-launch costs: it is the least certain of the calibrations.
 */
export const FMHA_V2_SOFTMAX_OPS = 40;
export const FMHA_V2_MMA_EFFICIENCY = 0.8;

/** The largest of fmha_v2's tile shapes whose Q tile and K/V buffers fit the GPU's SMEM (128×128 at d = 16). */
export function fmhaV2Tiles(gpu: GpuSpec, shape: ProblemShape, stages: number): { blockM: number; blockN: number } {
  const e = elemBytes(shape.dtype);
  const options = [
    [128, 128],
    [128, 64],
    [64, 64],
    [64, 32],
  ];
  for (const [m, n] of options)
    if (m * shape.d * e + stages * n * (shape.d + shape.dv) * e <= gpu.smemPerCtaBytes) return { blockM: m, blockN: n };
  return { blockM: 64, blockN: 32 };
}

export function fmhaV2Config(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): WarpTiledConfig {
  const kvStages = (f.stages ?? 2) === 1 ? 1 : 2;
  return {
    ...fmhaV2Tiles(gpu, shape, kvStages),
    warps: 4,
    // ptxas for the non-causal d = 16 sm89 kernel: "Used 229 registers" (kept for other d).
    registers: regAlloc(229),
    kvStages,
    copyUnit: 'ldgsts',
    tensorFlopsPerClk: mmaSyncRate(gpu, shape, true),
    mmaEfficiency: FMHA_V2_MMA_EFFICIENCY,
    softmaxOps: FMHA_V2_SOFTMAX_OPS,
    writesPartial: false,
    splits: 1,
    label: 'fmha_v2 warp',
  };
}

function resources(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures) {
  const cfg = fmhaV2Config(gpu, shape, f);
  const sheet = emptySheet('fmha-v2', gpu, cfg.blockM, cfg.blockN);
  warpTiledSmem(sheet, shape, cfg);
  requireHalf(sheet, shape, 'fmha_v2');
  if (f.stages !== undefined && f.stages > 2)
    sheet.does_not_fit.push(`stages: fmha_v2 double-buffers K/V (1 or 2 stages), got ${f.stages}`);
  if (shape.dtype === 'fp16')
    sheet.notes.push('fp16 accumulation (HALF_ACCUMULATION_FOR_FLASH_ATTENTION): the MMAs run at the fp16-accumulate rate.');
  sheet.notes.push('Q, K, V are read from one packed QKV tensor [B, S, 3, H, D]; LDGSTS predicates mask rows past the sequence end.');
  return finishSheet(sheet, gpu);
}

function grid(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): CtaWork[] {
  const { blockM, blockN } = fmhaV2Tiles(gpu, shape, (f.stages ?? 2) === 1 ? 1 : 2);
  const out: CtaWork[] = [];
  // blockIdx.z = batch, blockIdx.y = head, blockIdx.x = Q tile: launched x fastest.
  for (let b = 0; b < shape.batch; b++)
    for (let h = 0; h < shape.hq; h++)
      for (let i = 0; i < ceilDiv(shape.nq, blockM); i++)
        out.push({
          b,
          h,
          qBlock: i,
          kvFrom: 0,
          kvTo: visibleKvRange(shape, i * blockM, Math.min(shape.nq, (i + 1) * blockM), blockN)[1],
          reverse: false,
          split: 0,
        });
  return out;
}

export const fmhaV2Hw: HwAlgorithm = {
  id: 'fmha-v2',
  name: 'TensorRT-LLM fmha_v2 (SM89 LDGSTS, 4 warps)',
  arch: [80, 89, 90],
  switches: { stages: STAGES_SWITCH },
  geometry: warpTiledGeometry,
  resources,
  grid,
  build: (k, ctx, work) =>
    buildWarpTiled(k, ctx, work, fmhaV2Config(ctx.gpu, ctx.shape, ctx.features), resources(ctx.gpu, ctx.shape, ctx.features)),
  hbmBytes: ioBytes,
};
