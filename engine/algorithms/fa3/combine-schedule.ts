// FA3's split-KV combine kernel as it runs after the split CTAs (hopper/flash_fwd_combine_kernel.h,
// flash_fwd_combine_launch_template.h at 0251105a): 256 threads per CTA, a kBlockM × kBlockK tile
// of O per CTA; each CTA loads the LSE partials of every split, takes their max, scales each
// split's fp32 partial O by exp(LSE_s − LSE_max) / Σ, accumulates, and writes O and the LSE.
// Drawn on the SM timeline after this SM's split CTAs; simulate times it from the same bytes.

import type { GpuSpec } from '../../hw/gpus/index.ts';
import { ceilDiv, elemBytes, phase, sequencesOf, unpackShape, type BuildContext, type ProblemShape } from '../../hw/model.ts';
import type { Kernel } from '../../hw/scheduler.ts';
import { isFp8 } from '../../core/problem.ts';

const LAUNCH = 'hopper/flash_fwd_combine_launch_template.h@0251105a';
const KERNEL = 'hopper/flash_fwd_combine_kernel.h@0251105a';
const API = 'hopper/flash_api.cpp@0251105a';

/** The combine kernel's threads per CTA (kNThreads) and its cp.async ring of O partials (kStages). */
const THREADS = 256;
const STAGES = 4;
/** Combine CTAs drawn one by one on the timeline; the rest of this SM's share is folded into them. */
const DRAWN_CTAS = 4;

export interface Fa3Combine {
  blockM: number;
  blockK: number;
  /** Splits the LSE buffer is sized for (2^kLogMaxSplits). */
  maxSplits: number;
  /** CTAs of the combine grid: M blocks × K blocks × batch. */
  ctas: number;
  smemBytes: number;
  /** Bytes of fp32 partials (O and LSE) the combine reads, and of O and LSE it writes. */
  readBytes: number;
  writeBytes: number;
  why: string[];
}

/** The combine launch for a problem run with `splits` > 1 splits (the given shape, not packed). */
export function fa3CombineOf(given: ProblemShape, splits: number): Fa3Combine {
  const s = unpackShape(given);
  // kBlockK 64 for dv ≤ 64, else 128; kBlockM as small as the 256 threads allow.
  const blockK = s.dv <= 64 ? 64 : 128;
  const blockM = blockK % 128 === 0 ? 8 : blockK % 64 === 0 ? 16 : 32;
  const logMaxSplits = blockM >= 16 && splits <= 16 ? 4 : Math.max(5, Math.ceil(Math.log2(splits)));
  const maxSplits = 2 ** logMaxSplits;
  const rowsPerSeq = sequencesOf(s).map((q) => q.nq * s.hq);
  const ctas = rowsPerSeq.reduce((n, rows) => n + ceilDiv(rows, blockM), 0) * ceilDiv(s.dv, blockK);
  const rows = rowsPerSeq.reduce((a, b) => a + b, 0);
  const oBytes = isFp8(s.dtype) ? 2 : elemBytes(s.dtype);
  return {
    blockM,
    blockK,
    maxSplits,
    ctas,
    smemBytes: (maxSplits * blockM + blockM) * 4 + STAGES * blockM * blockK * 4,
    readBytes: rows * splits * (s.dv + 1) * 4,
    writeBytes: rows * (s.dv * oBytes + 4),
    why: [
      `${API} l. 387-408, 1170-1185: num_splits ${splits} > 1 launches the combine kernel with kBlockK ${blockK} (dv ${s.dv})`,
      `${LAUNCH} l. 66-86: kBlockM ${blockM}, kLogMaxSplits ${logMaxSplits}, ${THREADS} threads`,
      `${KERNEL} l. 228-232: grid ${ceilDiv(rows, blockM)} M blocks × ${ceilDiv(s.dv, blockK)} K blocks (${ctas} CTAs)`,
    ],
  };
}

/**
 * The combine's CTAs this SM runs after its split CTAs (its share of the combine grid), drawn as
 * one role that starts when every consumer of the SM has stored its partial (barrier `after`).
 */
export function drawFa3Combine(k: Kernel, ctx: BuildContext, splits: number, after: number): void {
  const { gpu } = ctx;
  const c = fa3CombineOf(ctx.shape, splits);
  const share = ceilDiv(c.ctas, gpu.smCount);
  const drawn = Math.min(share, DRAWN_CTAS);
  const load = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const role = k.role({
    name: 'combine',
    warps: [0, 1, 2, 3, 4, 5, 6, 7],
    // MinBlocksPerMultiprocessor 2 with 256 threads caps the compiler at 128 registers.
    registers: 128,
    job: `the combine kernel (${share} of its ${c.ctas} CTAs on this SM): merges the ${splits} splits' fp32 partials of a ${c.blockM} × ${c.blockK} tile of O`,
  });
  k.alloc({ space: 'smem', buffer: 'combine/sLSE', stage: 0, offset: 0, bytes: c.maxSplits * c.blockM * 4 });
  k.alloc({ space: 'smem', buffer: 'combine/sO', stage: 0, offset: c.maxSplits * c.blockM * 4, bytes: STAGES * c.blockM * c.blockK * 4 });
  const oE = isFp8(ctx.shape.dtype) ? 2 : elemBytes(ctx.shape.dtype);
  // cp.async groups: the LSE of every split first, then the O partials (cp_async_fence, cp_async_wait).
  const landed = k.counter('combine_cp_async');
  let groups = 0;
  role.wait(after, 0);
  for (let i = 0; i < drawn; i++) {
    // The CTAs past DRAWN_CTAS are spread over the drawn ones, so the phase holds the SM's whole share.
    const f = Math.floor(share / drawn) + (i < share % drawn ? 1 : 0);
    const tile = `Oc${i}`;
    const lseBytes = f * splits * c.blockM * 4;
    const oBytes = f * splits * c.blockM * c.blockK * 4;
    const smem = (buffer: string, offset: number, bytes: number, action: 'fill' | 'release') => ({
      space: 'smem' as const,
      buffer,
      stage: 0,
      offset,
      bytes,
      action,
      tile,
    });
    const lseSlot = c.maxSplits * c.blockM * 4;
    const oSlot = STAGES * c.blockM * c.blockK * 4;
    role.issue('cp.async', load(lseBytes), `cp.async LSE partials ×${splits}${f > 1 ? ` (${f} CTAs)` : ''}`, tile, {
      phase: phase(['combine'], null, null, ['LSE']),
      latency: gpu.copyLatencyCycles,
      arrive: [landed],
      mem: [smem('combine/sLSE', 0, lseSlot, 'fill')],
    });
    role.wait(landed, groups++);
    role.exec('mufu', (f * splits * c.blockM) / gpu.mufuPerClk, `exp(LSE_s − max) ×${splits}`, tile, {
      phase: phase(['combine']),
    });
    role.issue('cp.async', load(oBytes), `cp.async O partials ×${splits} (${STAGES}-slot ring)`, tile, {
      phase: phase(['combine'], null, null, ['Opartial']),
      latency: gpu.copyLatencyCycles,
      arrive: [landed],
      mem: [smem('combine/sO', lseSlot, oSlot, 'fill')],
    });
    role.wait(landed, groups++);
    role.exec('fma', (f * splits * c.blockM * c.blockK) / gpu.fmaPerClk, `O += scale_s · O_s ×${splits}`, tile, {
      phase: phase(['combine']),
      memDone: [smem('combine/sO', lseSlot, oSlot, 'release'), smem('combine/sLSE', 0, lseSlot, 'release')],
    });
    role.issue('store', load(f * c.blockM * (c.blockK * oE + 4)), `st.global O, LSE${f > 1 ? ` (${f} CTAs)` : ''}`, tile, {
      phase: phase(['write'], null, null, ['O']),
      latency: gpu.copyLatencyCycles,
    });
  }
}

/** The combine on the sheet: its launch and what it moves. */
export function fa3CombineNote(gpu: GpuSpec, given: ProblemShape, splits: number): string {
  const c = fa3CombineOf(given, splits);
  return `split KV (${splits} splits): each CTA writes an fp32 partial O and LSE; the combine kernel (${c.ctas} CTAs of ${THREADS} threads, ${c.blockM} × ${c.blockK} tiles, ${c.smemBytes} bytes of SMEM, ${ceilDiv(c.ctas, gpu.smCount)} per SM) reads ${c.readBytes} bytes of partials and writes ${c.writeBytes} bytes of O and LSE; the timeline draws it after this SM's split CTAs.`;
}
