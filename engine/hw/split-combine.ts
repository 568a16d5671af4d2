// A split-KV combine kernel on the SM timeline, after the split CTAs of the SM: each CTA loads
// the LSE partials of every split, takes their max, scales each split's fp32 partial O by
// exp(LSE_s − LSE_max) / Σ, accumulates, and writes O and the LSE. FA3's (hopper/
// flash_fwd_combine_kernel.h) and FA4's (flash_attn/cute/flash_fwd_combine.py) share this
// structure; each family describes its launch (tile, SMEM, bytes, upstream lines).

import type { GpuSpec } from './gpus/index.ts';
import { ceilDiv, outElemBytes, partialRowBytes, phase, sequencesOf, type BuildContext, type ProblemShape } from './model.ts';
import type { Kernel } from './scheduler.ts';

/** Combine CTAs drawn one by one on the timeline; the rest of this SM's share is folded into them. */
const DRAWN_CTAS = 4;

export interface CombineLaunch {
  /** tile_m × k_block_size of O per CTA. */
  blockM: number;
  blockK: number;
  /** Splits the LSE buffer is sized for (2^log_max_splits). */
  maxSplits: number;
  threads: number;
  /** The cp.async ring of O partials. */
  stages: number;
  /** Registers per thread the timeline's combine lane shows. */
  registers: number;
  /** CTAs of the combine grid that hold rows (a varlen grid launches more, which exit at once). */
  ctas: number;
  /** SMEM byte offsets of the LSE partials and of the O ring; the kernel's whole SMEM. */
  lseOffset: number;
  oOffset: number;
  smemBytes: number;
  /** Bytes of fp32 partials (O and LSE) the combine reads, and of O and LSE it writes. */
  readBytes: number;
  writeBytes: number;
  why: string[];
}

/** The combine grid both families launch: its tile, the CTAs that hold rows, and the bytes they move. */
export interface CombineCtas {
  /** tile_m × k_block_size of O per CTA. */
  blockM: number;
  blockK: number;
  /** K blocks of dv per M block. */
  kBlocks: number;
  /** Rows of O to combine: every sequence's seqlen_q · Hq. */
  rows: number;
  /** CTAs that hold rows: each sequence's M blocks × kBlocks. */
  ctas: number;
  /** fp32 partials (O and LSE) read over every split, and O and LSE written. */
  readBytes: number;
  writeBytes: number;
}

/**
 * The combine grid of an unpacked shape run with `splits` splits: k_block_size 64 for dv ≤ 64, else
 * 128, and tile_m as small as 256 threads allow (hopper/flash_fwd_combine_launch_template.h@0251105a
 * l. 66-86; flash_attn/cute/interface.py@0251105a l. 3643-3651 picks the same).
 */
export function combineCtas(s: ProblemShape, splits: number): CombineCtas {
  const blockK = s.dv <= 64 ? 64 : 128;
  const blockM = blockK % 128 === 0 ? 8 : blockK % 64 === 0 ? 16 : 32;
  const kBlocks = ceilDiv(s.dv, blockK);
  const seqs = sequencesOf(s);
  const rows = seqs.reduce((n, q) => n + q.batch * q.nq * s.hq, 0);
  const ctas = seqs.reduce((n, q) => n + q.batch * ceilDiv(q.nq * s.hq, blockM), 0) * kBlocks;
  return {
    blockM,
    blockK,
    kBlocks,
    rows,
    ctas,
    readBytes: rows * splits * partialRowBytes(s.dv),
    writeBytes: rows * (s.dv * outElemBytes(s.dtype) + 4),
  };
}

/** One barrier per kernel that the split CTAs of the SM arrive on and the combine waits for. */
export function combineBarrier(k: Kernel, arrivals: number): number {
  let b = combineBarriers.get(k);
  if (b === undefined) {
    b = k.mbarrier('combine_after_splits', arrivals);
    combineBarriers.set(k, b);
  }
  return b;
}
const combineBarriers = new WeakMap<Kernel, number>();

/**
 * The combine's CTAs this SM runs after its split CTAs (its share of the combine grid), drawn as
 * one role that starts when every split CTA of the SM has stored its partial (barrier `after`).
 */
export function drawSplitCombine(k: Kernel, ctx: BuildContext, splits: number, after: number, c: CombineLaunch): void {
  const { gpu } = ctx;
  const share = ceilDiv(c.ctas, gpu.smCount);
  const drawn = Math.min(share, DRAWN_CTAS);
  const load = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const role = k.role({
    name: 'combine',
    warps: Array.from({ length: c.threads / 32 }, (_, i) => i),
    registers: c.registers,
    job: `the combine kernel (${share} of its ${c.ctas} CTAs on this SM): merges the ${splits} splits' fp32 partials of a ${c.blockM} × ${c.blockK} tile of O`,
  });
  const lseSlot = c.maxSplits * c.blockM * 4;
  const oSlot = c.stages * c.blockM * c.blockK * 4;
  k.alloc({ space: 'smem', buffer: 'combine/sLSE', stage: 0, offset: c.lseOffset, bytes: lseSlot });
  k.alloc({ space: 'smem', buffer: 'combine/sO', stage: 0, offset: c.oOffset, bytes: oSlot });
  const oE = outElemBytes(ctx.shape.dtype);
  // cp.async groups: the LSE of every split first, then the O partials (cp_async_fence, cp_async_wait).
  const landed = k.counter('combine_cp_async');
  let groups = 0;
  role.wait(after, 0);
  for (let i = 0; i < drawn; i++) {
    // The CTAs past DRAWN_CTAS are spread over the drawn ones, so the phase holds the SM's whole share.
    const f = Math.floor(share / drawn) + (i < share % drawn ? 1 : 0);
    const tile = `Oc${i}`;
    const smem = (buffer: string, offset: number, bytes: number, action: 'fill' | 'release') => ({
      space: 'smem' as const,
      buffer,
      stage: 0,
      offset,
      bytes,
      action,
      tile,
    });
    role.issue('cp.async', load(f * splits * c.blockM * 4), `cp.async LSE partials ×${splits}${f > 1 ? ` (${f} CTAs)` : ''}`, tile, {
      phase: phase(['combine'], null, null, ['LSE']),
      latency: gpu.copyLatencyCycles,
      arrive: [landed],
      mem: [smem('combine/sLSE', c.lseOffset, lseSlot, 'fill')],
    });
    role.wait(landed, groups++);
    role.exec('mufu', (f * splits * c.blockM) / gpu.mufuPerClk, `exp(LSE_s − max) ×${splits}`, tile, {
      phase: phase(['combine']),
    });
    role.issue('cp.async', load(f * splits * c.blockM * c.blockK * 4), `cp.async O partials ×${splits} (${c.stages}-slot ring)`, tile, {
      phase: phase(['combine'], null, null, ['Opartial']),
      latency: gpu.copyLatencyCycles,
      arrive: [landed],
      mem: [smem('combine/sO', c.oOffset, oSlot, 'fill')],
    });
    role.wait(landed, groups++);
    role.exec('fma', (f * splits * c.blockM * c.blockK) / gpu.fmaPerClk, `O += scale_s · O_s ×${splits}`, tile, {
      phase: phase(['combine']),
      memDone: [smem('combine/sO', c.oOffset, oSlot, 'release'), smem('combine/sLSE', c.lseOffset, lseSlot, 'release')],
    });
    role.issue('store', load(f * c.blockM * (c.blockK * oE + 4)), `st.global O, LSE${f > 1 ? ` (${f} CTAs)` : ''}`, tile, {
      phase: phase(['write'], null, null, ['O']),
      latency: gpu.copyLatencyCycles,
    });
  }
}

/** The combine on the sheet: its launch and what it moves. */
export function combineNote(gpu: GpuSpec, c: CombineLaunch, splits: number): string {
  return `split KV (${splits} splits): each CTA writes an fp32 partial O and LSE; the combine kernel (${c.ctas} CTAs of ${c.threads} threads, ${c.blockM} × ${c.blockK} tiles, ${c.smemBytes} bytes of SMEM, ${ceilDiv(c.ctas, gpu.smCount)} per SM) reads ${c.readBytes} bytes of partials and writes ${c.writeBytes} bytes of O and LSE; the timeline draws it after this SM's split CTAs.`;
}
