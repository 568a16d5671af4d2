// Flash-decoding ("Flash-Decoding for long-context inference", 2023; FA2's split-KV kernel): for decoding, Nq is tiny and B·H can
// be far below the SM count, so one CTA per (batch, head) leaves most SMs idle. The K/V
// sequence is split into `splits` ranges, each a CTA that runs the FA2 loop over its range
// and writes an unnormalized partial O (fp32) and its LSE; a second kernel combines the
// splits per row: LSE = log Σ exp(LSE_s), O = Σ exp(LSE_s − LSE) · O_s.
// K/V stream from HBM once (no reuse between CTAs), so copies share HBM bandwidth.

import type { GpuSpec } from '../../hw/gpus/index.ts';
import {
  ceilDiv,
  splitCombineUs,
  emptySheet,
  finishSheet,
  regAlloc,
  visibleKvRange,
  ioBytes,
  partialBytes,
  requireHalf,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
} from '../../hw/model.ts';
import { FLASH_DECODING_FEATURES } from './forward.ts';
import {
  SOFTMAX_FMA_OPS,
  buildWarpTiled,
  mmaSyncRate,
  warpTiledGeometry,
  warpTiledSmem,
  type WarpTiledConfig,
} from '../../hw/schedules/warp-tiled.ts';
import { MMA_SYNC_EFFICIENCY } from '../cute-fa2/schedule.ts';

export function decodingTiles(shape: ProblemShape): { blockM: number; blockN: number } {
  // FA2's split-KV traits: 64 query rows, 128 keys per block (64 past d = 128).
  return { blockM: 64, blockN: Math.max(shape.d, shape.dv) <= 128 ? 128 : 64 };
}

/**
 * FA2's split heuristic: the wave efficiency of s splits is (CTAs·s / SMs) over its
 * ceiling; take the smallest s within 85% of the best, never more than the K/V blocks.
 */
export function defaultSplits(gpu: GpuSpec, shape: ProblemShape): number {
  const { blockM, blockN } = decodingTiles(shape);
  const ctas = shape.batch * shape.hq * ceilDiv(shape.nq, blockM);
  const blocks = ceilDiv(shape.nk, blockN);
  if (ctas >= 0.8 * gpu.smCount) return 1;
  const max = Math.min(blocks, 128);
  const eff = (s: number) => (ctas * s) / gpu.smCount / Math.ceil((ctas * s) / gpu.smCount);
  let best = 0;
  for (let s = 1; s <= max; s++) best = Math.max(best, eff(s));
  for (let s = 1; s <= max; s++) if (eff(s) >= 0.85 * best) return s;
  return 1;
}

function splitsOf(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): number {
  const blocks = ceilDiv(shape.nk, decodingTiles(shape).blockN);
  return Math.min(f.splits ?? defaultSplits(gpu, shape), blocks);
}

function config(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): WarpTiledConfig {
  const t = decodingTiles(shape);
  return {
    ...t,
    warps: 4,
    registers: Math.min(255, regAlloc(((16 * t.blockN + 16 * shape.dv) / 32) * 1.5 + 40)),
    kvStages: 1,
    copyUnit: 'cpasync',
    tensorFlopsPerClk: mmaSyncRate(gpu, shape),
    mmaEfficiency: MMA_SYNC_EFFICIENCY,
    softmaxOps: SOFTMAX_FMA_OPS,
    writesPartial: splitsOf(gpu, shape, f) > 1,
    splits: splitsOf(gpu, shape, f),
    label: 'split-KV warp',
  };
}

function resources(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures) {
  const cfg = config(gpu, shape, f);
  const sheet = emptySheet('flash-decoding', gpu, cfg.blockM, cfg.blockN);
  warpTiledSmem(sheet, shape, cfg);
  const splits = splitsOf(gpu, shape, f);
  sheet.splits = splits;
  requireHalf(sheet, shape, 'flash-decoding');
  sheet.notes.push(
    `${splits} K/V split${splits > 1 ? 's' : ''} per (batch, head, Q tile); ${splits > 1 ? 'partial O and LSE in fp32 go to HBM for the combine kernel' : 'no combine needed'}.`,
  );
  return finishSheet(sheet, gpu);
}

function grid(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): CtaWork[] {
  const { blockM, blockN } = decodingTiles(shape);
  const splits = splitsOf(gpu, shape, f);
  const out: CtaWork[] = [];
  for (let b = 0; b < shape.batch; b++)
    for (let h = 0; h < shape.hq; h++)
      for (let i = 0; i < ceilDiv(shape.nq, blockM); i++) {
        const [from, to] = visibleKvRange(shape, i * blockM, Math.min(shape.nq, (i + 1) * blockM), blockN);
        const per = ceilDiv(to - from, splits);
        for (let s = 0; s < splits; s++) {
          const kvFrom = Math.min(to, from + s * per);
          out.push({ b, h, qBlock: i, kvFrom, kvTo: Math.min(to, kvFrom + per), reverse: false, split: s });
        }
      }
  return out;
}

function combineUs(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): number {
  return splitCombineUs(gpu, shape, splitsOf(gpu, shape, f));
}

export const flashDecodingHw: HwAlgorithm = {
  id: 'flash-decoding',
  name: 'Flash-decoding (split-KV + combine)',
  arch: [80, 89, 90, 100],
  switches: { splits: FLASH_DECODING_FEATURES.splits },
  geometry: warpTiledGeometry,
  streamsKv: true,
  resources,
  grid,
  build: (k, ctx, work) =>
    buildWarpTiled(k, ctx, work, config(ctx.gpu, ctx.shape, ctx.features), resources(ctx.gpu, ctx.shape, ctx.features)),
  epilogueKernelUs: combineUs,
  hbmBytes: (s, f, gpu) => {
    const splits = splitsOf(gpu, s, f);
    return ioBytes(s) + partialBytes(s, splits);
  },
};
