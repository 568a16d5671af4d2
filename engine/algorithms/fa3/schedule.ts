// FlashAttention-3 on SM90 (seed 000's FA3 pseudo-code, seed 004's background, the FA3
// paper §3). One CTA owns a 128-row Q tile:
//   - a producer warpgroup (24 registers after setmaxnreg) whose first warp issues the TMA
//     loads: Q once, then K_j and V_j into an s-stage ring (wait "empty", TMA signals "full");
//   - two consumer warpgroups (240 registers each), 64 Q rows apiece, running
//     GEMM0 S = Q·K_jᵀ (wgmma, SMEM×SMEM), the online softmax in registers, and
//     GEMM1 O += P·V_j (wgmma, P from registers).
// Ping-pong: named barriers hand the tensor cores from one consumer to the other, so one
// warpgroup's softmax runs under the other's GEMMs. Intra-warpgroup overlap: the next
// GEMM0 is issued before the current GEMM1, and the softmax of S_next runs while GEMM1 is
// on the tensor cores. Both can be switched off (--no-pingpong, --no-intra-overlap).
// K/V blocks are visited from the last to the first, as the kernel does (the block with
// the causal diagonal is masked first).

import { isFp8 } from '../../core/problem.ts';
import type { ResourceSheet } from '../../hw/events.ts';
import type { GpuSpec } from '../../hw/gpus/index.ts';
import {
  SOFTMAX_FMA_OPS,
  ceilDiv,
  elemBytes,
  emptySheet,
  finishSheet,
  layoutSmem,
  mmaCycles,
  prefix,
  tensorRate,
  visibleKvRange,
  crossesDiagonal,
  kvBlocksOf,
  ioBytes,
  hbmOut,
  requireHalf,
  type BuildContext,
  type CtaWork,
  type HwAlgorithm,
  type HwFeatures,
  type ProblemShape,
  STAGES_SWITCH,
} from '../../hw/model.ts';
import { FA3_FEATURES } from './forward.ts';
import type { Kernel } from '../../hw/scheduler.ts';

/**
 * Calibration (FA3 paper, Table/Fig. ablation at d = 128, N = 8K on H100 SXM5 FP16):
 * wgmma delivers this fraction of the datasheet rate inside the attention loop (operand
 * fetch from swizzled SMEM, issue slots shared with softmax instructions).
 */
export const WGMMA_EFFICIENCY = 0.74;
/** Cycles from the last wgmma of a group to its results being readable (wgmma.wait_group). */
export const WGMMA_LATENCY = 120;
/** Per-iteration bookkeeping of a consumer (barrier waits, fences, index math), cycles. */
export const CONSUMER_OVERHEAD = 60;

export const FA3_BLOCK_M = 128;
const ROWS_PER_WG = 64;
const CONSUMERS = 2;

export function fa3Tiles(shape: ProblemShape): { blockM: number; blockN: number; stages: number } {
  // FA3's tile table for two consumer warpgroups: 128×128 up to d = 128, 128×80 at d = 256.
  // FP8 halves every operand, so the same shared memory holds wider K/V blocks (the kernel's
  // 1-byte table: 128×224 up to d = 128, 128×160 to d = 192, 128×128 beyond).
  const dMax = Math.max(shape.d, shape.dv);
  if (isFp8(shape.dtype)) return { blockM: FA3_BLOCK_M, blockN: dMax <= 128 ? 224 : dMax <= 192 ? 160 : 128, stages: 2 };
  const blockN = dMax <= 128 ? 128 : 80;
  return { blockM: FA3_BLOCK_M, blockN, stages: 2 };
}

function resources(gpu: GpuSpec, shape: ProblemShape, f: HwFeatures): ResourceSheet {
  const { blockM, blockN, stages: defStages } = fa3Tiles(shape);
  const stages = f.stages ?? defStages;
  const e = elemBytes(shape.dtype);
  const sheet = emptySheet('fa3', gpu, blockM, blockN);
  sheet.kv_stage = stages;
  const items = [
    { name: 'mbarriers', stages: 1, bytes: 8 * (1 + 4 * stages), align: 8 },
    { name: 'sQ', stages: 1, bytes: blockM * shape.d * e, align: 1024 },
    { name: 'sK', stages, bytes: blockN * shape.d * e, align: 1024 },
    { name: 'sV', stages, bytes: blockN * shape.dv * e, align: 1024 },
  ];
  // FP8 wgmma reads both operands K-major; V arrives with d contiguous, so the producer
  // warpgroup transposes each V block in shared memory (LDSM.T then STSM) into sVt before
  // P·V reads it. The O tile leaves as bf16 (the FP8 kernel's output type).
  const fp8 = isFp8(shape.dtype);
  if (fp8) items.push({ name: 'sVt', stages, bytes: blockN * shape.dv * e, align: 1024 });
  const oBytes = blockM * shape.dv * (fp8 ? 2 : e);
  const separateO = oAliasesQ(gpu, shape, stages) === false;
  layoutSmem(sheet, separateO ? [...items, { name: 'sO', stages: 1, bytes: oBytes, align: 1024 }] : items);
  if (!separateO) sheet.notes.push('sO aliases sQ: Q is dead once both consumers passed the epilogue barrier.');
  if (fp8) sheet.notes.push('FP8: V is transposed in shared memory into sVt (FP8 wgmma takes K-major operands only); O is written as bf16.');
  // setmaxnreg: the producer gives registers back (24) so the consumers can hold S, P and O (240).
  sheet.roles.push({ name: 'producer', warps: [0, 1, 2, 3], registers: 24 });
  for (let w = 0; w < CONSUMERS; w++) sheet.roles.push({ name: `consumer${w}`, warps: [4 + 4 * w, 5 + 4 * w, 6 + 4 * w, 7 + 4 * w], registers: 240 });
  requireHalf(sheet, shape, 'FA3', gpu, true);
  if (gpu.sm !== 90) sheet.does_not_fit.push(`arch: FA3 is written for SM90 (wgmma, TMA, setmaxnreg); ${gpu.name} is SM${gpu.sm}`);
  return finishSheet(sheet, gpu);
}

/** True when a separate sO does not fit and O is staged over sQ (d > 128). */
function oAliasesQ(gpu: GpuSpec, shape: ProblemShape, stages: number): boolean {
  const { blockM, blockN } = fa3Tiles(shape);
  const e = elemBytes(shape.dtype);
  const vt = isFp8(shape.dtype) ? stages * blockN * shape.dv * e : 0;
  const oE = isFp8(shape.dtype) ? 2 : e;
  const need = 1024 + blockM * (shape.d * e + shape.dv * oE) + stages * blockN * (shape.d + shape.dv) * e + vt;
  return need > gpu.smemPerCtaBytes && shape.dv <= shape.d;
}

function grid(_gpu: GpuSpec, shape: ProblemShape): CtaWork[] {
  const { blockM, blockN } = fa3Tiles(shape);
  const out: CtaWork[] = [];
  const tr = ceilDiv(shape.nq, blockM);
  for (let b = 0; b < shape.batch; b++)
    for (let h = 0; h < shape.hq; h++)
      for (let i = 0; i < tr; i++) {
        const [kvFrom, kvTo] = visibleKvRange(shape, i * blockM, Math.min(shape.nq, (i + 1) * blockM), blockN);
        out.push({ b, h, qBlock: i, kvFrom, kvTo, reverse: true, split: 0 });
      }
  return out;
}

function build(k: Kernel, ctx: BuildContext, work: CtaWork): void {
  const { gpu, shape, features: f } = ctx;
  const { blockM, blockN, stages: defStages } = fa3Tiles(shape);
  const S = f.stages ?? defStages;
  const e = elemBytes(shape.dtype);
  const p = prefix(ctx);
  const sheet = resources(gpu, shape, f);
  const off = (name: string, stage: number) => sheet.smem.buffers.find((b) => b.name === name && b.stage === stage)!.offset;
  const kv = kvBlocksOf(work);
  const n = kv.length;
  const qTile = `Q${work.qBlock}`;
  k.fifoUnits.add('tensor');

  const rate = tensorRate(gpu, shape.dtype) * WGMMA_EFFICIENCY;
  const gemm0 = mmaCycles(ROWS_PER_WG, blockN, shape.d, rate);
  const gemm1 = mmaCycles(ROWS_PER_WG, shape.dv, blockN, rate);
  const elems = ROWS_PER_WG * blockN;
  const load = (bytes: number) => bytes / ctx.loadBytesPerClk;

  for (const b of sheet.smem.buffers) if (b.name !== 'mbarriers') k.alloc({ space: 'smem', buffer: `${p}${b.name}`, stage: b.stage, offset: b.offset, bytes: b.bytes });

  // FP8: the producer warpgroup transposes each landed V block into sVt (FP8 wgmma reads
  // K-major operands only) and frees sV itself; the consumers read and free sVt.
  const fp8 = isFp8(shape.dtype);
  const oE = fp8 ? 2 : e;
  const fullQ = k.mbarrier(`${p}full_Q`);
  const fullK: number[] = [];
  const fullV: number[] = [];
  const emptyK: number[] = [];
  const emptyV: number[] = [];
  const fullVt: number[] = [];
  const emptyVt: number[] = [];
  for (let s = 0; s < S; s++) {
    fullK.push(k.mbarrier(`${p}full_K[${s}]`));
    fullV.push(k.mbarrier(`${p}full_V[${s}]`));
    const rel = (name: 'sK' | 'sV' | 'sVt', t: 'K' | 'V') => (ph: number) => {
      const j = kv[s + ph * S];
      return j === undefined ? null : { space: 'smem' as const, buffer: `${p}${name}`, stage: s, offset: off(name, s), bytes: blockN * (t === 'K' ? shape.d : shape.dv) * e, action: 'release' as const, tile: `${t}${j}` };
    };
    emptyK.push(k.mbarrier(`${p}empty_K[${s}]`, CONSUMERS, rel('sK', 'K')));
    emptyV.push(k.mbarrier(`${p}empty_V[${s}]`, fp8 ? 1 : CONSUMERS, rel('sV', 'V')));
    if (fp8) {
      fullVt.push(k.mbarrier(`${p}full_Vt[${s}]`));
      emptyVt.push(k.mbarrier(`${p}empty_Vt[${s}]`, CONSUMERS, rel('sVt', 'V')));
    }
  }
  // What the consumers wait on before P·V and release after it.
  const vReady = fp8 ? fullVt : fullV;
  const vFree = fp8 ? emptyVt : emptyV;
  const pp = [k.named(`${p}pingpong_WG1`, 2), k.named(`${p}pingpong_WG2`, 2)];
  const epi = k.named(`${p}epilogue`, CONSUMERS);
  const aliasO = oAliasesQ(gpu, shape, S);
  const oBuf = aliasO ? 'sQ' : 'sO';

  const prod = k.role({ name: `${p}producer`, warps: [0, 1, 2, 3], registers: 24, job: 'warp 0 issues TMA loads of Q and the K/V ring; warps 1-3 idle' });
  prod.issue('tma', load(blockM * shape.d * e), `tma ${qTile}`, qTile, {
    latency: gpu.copyLatencyCycles,
    arrive: [fullQ],
    mem: [{ space: 'smem', buffer: `${p}sQ`, stage: 0, offset: off('sQ', 0), bytes: blockM * shape.d * e, action: 'fill', tile: qTile }],
  });
  for (let i = 0; i < n; i++) {
    const s = i % S;
    const round = Math.floor(i / S);
    const j = kv[i];
    prod.wait(emptyK[s], round - 1);
    prod.issue('tma', load(blockN * shape.d * e), `tma K${j}`, `K${j}`, {
      latency: gpu.copyLatencyCycles,
      arrive: [fullK[s]],
      mem: [{ space: 'smem', buffer: `${p}sK`, stage: s, offset: off('sK', s), bytes: blockN * shape.d * e, action: 'fill', tile: `K${j}` }],
    });
    prod.wait(emptyV[s], round - 1);
    prod.issue('tma', load(blockN * shape.dv * e), `tma V${j}`, `V${j}`, {
      latency: gpu.copyLatencyCycles,
      arrive: [fullV[s]],
      mem: [{ space: 'smem', buffer: `${p}sV`, stage: s, offset: off('sV', s), bytes: blockN * shape.dv * e, action: 'fill', tile: `V${j}` }],
    });
    if (fp8) {
      // LDSM.T out of sV, STSM into sVt: every byte read and written once through shared memory.
      const vBytes = blockN * shape.dv * e;
      prod.wait(fullV[s], round);
      prod.wait(emptyVt[s], round - 1);
      prod.exec('smem', (2 * vBytes) / gpu.smemBytesPerClk, `transpose V${j} → sVt`, `V${j}`, {
        arrive: [fullVt[s], emptyV[s]],
        mem: [{ space: 'smem', buffer: `${p}sVt`, stage: s, offset: off('sVt', s), bytes: vBytes, action: 'fill', tile: `V${j}` }],
      });
    }
  }

  for (let w = 0; w < CONSUMERS; w++) {
    const warps = [4 + 4 * w, 5 + 4 * w, 6 + 4 * w, 7 + 4 * w];
    const c = k.role({ name: `${p}consumer${w}`, warps, registers: 240, job: `rows ${w * ROWS_PER_WG}-${(w + 1) * ROWS_PER_WG - 1} of the Q tile: both GEMMs and the online softmax` });
    const done = k.counter(`${p}wgmma_WG${w + 1}`);
    let issued = 0;
    const other = pp[1 - w];
    const mine = pp[w];
    const regs = (buffer: string, tile: string, bytes: number) => ({ space: 'regs' as const, buffer: `${p}${buffer}`, stage: w, offset: 0, bytes, action: 'fill' as const, tile });
    const issueGemm1 = (idx: number) => {
      const j = kv[idx];
      const s = idx % S;
      c.wait(vReady[s], Math.floor(idx / S));
      c.issue('tensor', gemm1, `gemm1 O+=P·V${j}`, `O${work.qBlock}`, { latency: WGMMA_LATENCY, chunks: blockN / 16, arrive: [done], memDone: [regs('regs.O', `O${work.qBlock}`, ROWS_PER_WG * shape.dv * 4)] });
      return issued++;
    };
    const releaseV = (idx: number) => c.arrive(vFree[idx % S]);
    if (f.pingpong && w === 1) c.arrive(pp[0]);
    c.wait(fullQ, 0);
    for (let i = 0; i < n; i++) {
      const j = kv[i];
      const s = i % S;
      c.wait(fullK[s], Math.floor(i / S));
      if (f.pingpong) c.sync(mine);
      let g0: number;
      let g1 = -1;
      if (f.intraOverlap) {
        c.issue('tensor', gemm0, `gemm0 S=Q·K${j}ᵀ`, `S${j}`, { latency: WGMMA_LATENCY, chunks: shape.d / 16, arrive: [done], memDone: [regs('regs.S', `S${j}`, ROWS_PER_WG * blockN * 4)] });
        g0 = issued++;
        if (i > 0) g1 = issueGemm1(i - 1);
      } else {
        if (i > 0) {
          g1 = issueGemm1(i - 1);
          c.wait(done, g1);
          releaseV(i - 1);
        }
        c.issue('tensor', gemm0, `gemm0 S=Q·K${j}ᵀ`, `S${j}`, { latency: WGMMA_LATENCY, chunks: shape.d / 16, arrive: [done], memDone: [regs('regs.S', `S${j}`, ROWS_PER_WG * blockN * 4)] });
        g0 = issued++;
      }
      if (f.pingpong) c.arrive(other);
      c.wait(done, g0);
      c.arrive(emptyK[s]);
      // Online softmax of S_j in registers: row max, exp2 on MUFU, row sum and 16-bit
      // conversion on the FMA pipes; the O rescale by exp(m_old − m_new) happens here too.
      if (crossesDiagonal(shape, work.qBlock * blockM + w * ROWS_PER_WG, j, blockN)) c.exec('fma', (elems * 2) / gpu.fmaPerClk, 'causal mask', `S${j}`);
      c.exec('fma', (elems * 1 + ROWS_PER_WG * shape.dv) / gpu.fmaPerClk + CONSUMER_OVERHEAD, 'rowmax, rescale O', `S${j}`);
      c.exec('mufu', elems / gpu.mufuPerClk, 'exp2', `P${j}`);
      c.exec('fma', (elems * (SOFTMAX_FMA_OPS - 1)) / gpu.fmaPerClk, 'rowsum, cvt P', `P${j}`, { memDone: [regs('regs.P', `P${j}`, ROWS_PER_WG * blockN * e)] });
      if (f.intraOverlap && g1 >= 0) {
        c.wait(done, g1);
        releaseV(i - 1);
      }
    }
    if (n > 0) {
      if (f.pingpong) c.sync(mine);
      const g1 = issueGemm1(n - 1);
      if (f.pingpong) c.arrive(other);
      c.wait(done, g1);
      releaseV(n - 1);
    }
    // Epilogue: O / l and conversion in registers, both consumers meet at a named barrier
    // (the sQ region may be reused for O), each writes its 64 rows to SMEM, TMA store.
    c.exec('fma', (ROWS_PER_WG * shape.dv * 2) / gpu.fmaPerClk, 'normalize O/l', `O${work.qBlock}`);
    c.sync(epi);
    if (aliasO && w === 0) c.mem({ space: 'smem', buffer: `${p}sQ`, stage: 0, offset: off('sQ', 0), bytes: blockM * shape.d * e, action: 'release', tile: qTile });
    c.issue('tma', load(ROWS_PER_WG * shape.dv * oE), `tma store O${work.qBlock}`, `O${work.qBlock}`, {
      latency: gpu.copyLatencyCycles,
      mem: [{ space: 'smem', buffer: `${p}${oBuf}`, stage: 0, offset: off(oBuf, 0) + w * ROWS_PER_WG * shape.dv * oE, bytes: ROWS_PER_WG * shape.dv * oE, action: 'fill', tile: `O${work.qBlock}.${w}` }],
      memDone: [hbmOut(shape, work, work.qBlock * blockM + w * ROWS_PER_WG, ROWS_PER_WG, `O${work.qBlock}.${w}`)],
    });
  }
}

export const fa3Hw: HwAlgorithm = {
  id: 'fa3',
  name: 'FlashAttention-3 (SM90: TMA producer, ping-pong consumers)',
  arch: [90],
  switches: { pingpong: FA3_FEATURES.pingpong, intraOverlap: FA3_FEATURES.intraOverlap, stages: STAGES_SWITCH },
  longestFirst: true,
  resources,
  grid,
  build,
  hbmBytes: ioBytes,
};
