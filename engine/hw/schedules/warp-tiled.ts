// The schedule shared by the SM80-style kernels (the CuTe FA2 pipeline, TensorRT-LLM's
// fmha_v2, split-KV flash-decoding): no warp specialization. Every warp of the CTA owns
// block_m / warps Q rows and runs the whole loop itself with warp-level mma.sync; the K/V
// copies are issued cooperatively by all warps (cp.async / LDGSTS, each warp a quarter of
// the tile), followed by cp.async.wait_group and __syncthreads.
//
// A warp is bound to one SM sub-partition (warp id mod 4): its MMAs run on that
// sub-partition's tensor core, its exponentials on that sub-partition's MUFU, so warps of
// co-resident CTAs that share a sub-partition share those units (processor sharing).
//
// Two K/V pipelines:
//   stages 1 (the tiny-flash-attention CuTe kernel): K and V have one buffer each; V_j is loaded while
//     Q·K_jᵀ runs and K_{j+1} while P·V_j runs;
//   stages 2 (fmha_v2): K/V double-buffered; K_{j+1}, V_{j+1} load during all of step j.

import type { ResourceSheet } from '../events.ts';
import type { GpuSpec } from '../gpus/index.ts';
import {
  SOFTMAX_FMA_OPS,
  crossesDiagonal,
  elemBytes,
  kvBlocksOf,
  mmaCycles,
  prefix,
  hbmOut,
  partialRowBytes,
  tensorRate,
  type BuildContext,
  type CtaWork,
  type ProblemShape,
  phase,
} from '../model.ts';
import type { Kernel, MemSpec, RoleProgram } from '../scheduler.ts';

export interface WarpTiledConfig {
  blockM: number;
  blockN: number;
  warps: number;
  registers: number;
  kvStages: 1 | 2;
  /** Copy unit name for the timeline: "cpasync" (SM80 cp.async) or "ldgsts" (fmha_v2's name for it). */
  copyUnit: 'cpasync' | 'ldgsts';
  /** Tensor FLOPs per clock per SM for this kernel's MMA (dtype, accumulation, mma.sync rate applied). */
  tensorFlopsPerClk: number;
  /** Fraction of that rate reached in the loop (ldmatrix traffic, register moves, issue). */
  mmaEfficiency: number;
  /** FMA-pipe operations per S element of the softmax. */
  softmaxOps: number;
  /** Partial results (O in fp32 and LSE) instead of the final O (split-KV). */
  writesPartial: boolean;
  /** Splits per (batch, head) when writing partial results. */
  splits: number;
  /** Name used in role jobs. */
  label: string;
}

/** SMEM layout: sQ, then sK and sV with kvStages buffers each. */
export function warpTiledSmem(sheet: ResourceSheet, shape: ProblemShape, cfg: WarpTiledConfig): void {
  const e = elemBytes(shape.dtype);
  let off = 0;
  const put = (name: string, stage: number, bytes: number) => {
    off = Math.ceil(off / 128) * 128;
    sheet.smem.buffers.push({ name, stage, offset: off, bytes });
    off += bytes;
  };
  put('sQ', 0, cfg.blockM * shape.d * e);
  for (let s = 0; s < cfg.kvStages; s++) put('sK', s, cfg.blockN * shape.d * e);
  for (let s = 0; s < cfg.kvStages; s++) put('sV', s, cfg.blockN * shape.dv * e);
  sheet.smem.used_bytes = off;
  sheet.kv_stage = cfg.kvStages;
  for (let w = 0; w < cfg.warps; w++) sheet.roles.push({ name: `warp${w}`, warps: [w], registers: cfg.registers });
}

export function buildWarpTiled(k: Kernel, ctx: BuildContext, work: CtaWork, cfg: WarpTiledConfig, sheet: ResourceSheet): void {
  const { gpu, shape } = ctx;
  const p = prefix(ctx);
  const e = elemBytes(shape.dtype);
  const kv = kvBlocksOf(work);
  const n = kv.length;
  const rows = cfg.blockM / cfg.warps;
  const off = (name: string, stage: number) => sheet.smem.buffers.find((b) => b.name === name && b.stage === stage)!.offset;
  for (const b of sheet.smem.buffers) k.alloc({ space: 'smem', buffer: `${p}${b.name}`, stage: b.stage, offset: b.offset, bytes: b.bytes });
  const kBytes = cfg.blockN * shape.d * e;
  const vBytes = cfg.blockN * shape.dv * e;
  const qBytes = cfg.blockM * shape.d * e;
  const spRate = (cfg.tensorFlopsPerClk * cfg.mmaEfficiency) / 4;
  const qk = mmaCycles(rows, cfg.blockN, shape.d, spRate);
  const pv = mmaCycles(rows, shape.dv, cfg.blockN, spRate);
  const elems = rows * cfg.blockN;
  const copy = (bytes: number) => bytes / ctx.loadBytesPerClk;
  const sync = k.named(`${p}__syncthreads`, cfg.warps);
  const fill = (buf: string, stage: number, bytes: number, tile: string): MemSpec => ({
    space: 'smem',
    buffer: `${p}${buf}`,
    stage,
    offset: off(buf, stage),
    bytes,
    action: 'fill',
    tile,
  });
  const release = (buf: string, stage: number, bytes: number, tile: string): MemSpec => ({
    ...fill(buf, stage, bytes, tile),
    action: 'release',
  });
  const diag = (j: number, w: number) => crossesDiagonal(shape, work.qBlock * cfg.blockM + w * rows, j, cfg.blockN);

  for (let w = 0; w < cfg.warps; w++) {
    const sp = (ctx.ctaIndex * cfg.warps + w) % 4;
    const r: RoleProgram = k.role({
      name: `${p}warp${w}`,
      warps: [w],
      registers: cfg.registers,
      job: `${cfg.label}: Q rows ${w * rows}-${(w + 1) * rows - 1}; a quarter of every copy; both MMAs and the softmax of its rows`,
    });
    // Co-resident CTAs start out of phase, as they do once the first wave has drained (a
    // CTA starts whenever its predecessor on the SM ends); in lockstep their softmaxes
    // would always coincide and leave the tensor cores idle together.
    r.delay((ctx.ctaIndex / ctx.ctaCount) * (qk + pv + (elems * cfg.softmaxOps) / (gpu.fmaPerClk / 4)));
    const cp = k.counter(`${p}cp.async_warp${w}`);
    let groups = 0;
    const lead = w === 0;
    // One commit group: this warp's share of the tiles, with memory events from warp 0.
    const group = (tiles: { buf: string; stage: number; bytes: number; tile: string }[], before: MemSpec[] = []) => {
      let bytes = 0;
      for (const t of tiles) bytes += t.bytes;
      if (lead) for (const m of before) r.mem(m);
      const kvTile = tiles.find((t) => !t.tile.startsWith('Q'));
      const copied = phase(
        ['load'],
        kvTile ? Number(kvTile.tile.slice(1)) : null,
        null,
        tiles.map((t) => t.tile[0]),
      );
      r.issue(
        cfg.copyUnit,
        copy(bytes / cfg.warps),
        `${cfg.copyUnit} ${tiles.map((t) => t.tile).join('+')}`,
        tiles.map((t) => t.tile).join('+'),
        {
          phase: copied,
          latency: gpu.copyLatencyCycles,
          arrive: [cp],
          mem: lead ? tiles.map((t) => fill(t.buf, t.stage, t.bytes, t.tile)) : undefined,
        },
      );
      return groups++;
    };
    const waitAll = () => {
      if (groups > 0) r.wait(cp, groups - 1);
      r.sync(sync);
    };
    const qTile = `Q${work.qBlock}`;
    const tensor = `tensor.sp${sp}`;
    const softmax = (j: number, first: boolean) => {
      if (diag(j, w)) r.exec(`fma.sp${sp}`, (elems * 2) / (gpu.fmaPerClk / 4), 'causal mask', `S${j}`, { phase: phase(['mask'], j, w) });
      r.exec(
        `fma.sp${sp}`,
        (elems + (first ? 0 : rows * shape.dv)) / (gpu.fmaPerClk / 4),
        first ? 'row max' : 'row max, rescale O',
        `S${j}`,
        {
          phase: phase(first ? ['rowmax'] : ['rowmax', 'rescale'], j, w),
        },
      );
      r.exec(`mufu.sp${sp}`, elems / (gpu.mufuPerClk / 4), 'exp2', `P${j}`, { phase: phase(['exp'], j, w) });
      r.exec(`fma.sp${sp}`, (elems * (cfg.softmaxOps - 1)) / (gpu.fmaPerClk / 4), 'row sum, cvt P', `P${j}`, {
        phase: phase(['rowsum'], j, w),
      });
    };
    if (n === 0) continue;
    if (cfg.kvStages === 1) {
      group([
        { buf: 'sQ', stage: 0, bytes: qBytes, tile: qTile },
        { buf: 'sK', stage: 0, bytes: kBytes, tile: `K${kv[0]}` },
      ]);
      for (let i = 0; i < n; i++) {
        const j = kv[i];
        waitAll();
        group([{ buf: 'sV', stage: 0, bytes: vBytes, tile: `V${j}` }], i > 0 ? [release('sV', 0, vBytes, `V${kv[i - 1]}`)] : []);
        r.exec(tensor, qk, `mma.sync S=Q·K${j}ᵀ`, `S${j}`, { phase: phase(['qk'], j, w) });
        waitAll();
        if (i + 1 < n) group([{ buf: 'sK', stage: 0, bytes: kBytes, tile: `K${kv[i + 1]}` }], [release('sK', 0, kBytes, `K${j}`)]);
        else if (lead) r.mem(release('sK', 0, kBytes, `K${j}`));
        softmax(j, i === 0);
        r.exec(tensor, pv, `mma.sync O+=P·V${j}`, `O${work.qBlock}`, { phase: phase(['pv'], j, w) });
      }
      if (lead) r.mem(release('sV', 0, vBytes, `V${kv[n - 1]}`));
    } else {
      group([
        { buf: 'sQ', stage: 0, bytes: qBytes, tile: qTile },
        { buf: 'sK', stage: 0, bytes: kBytes, tile: `K${kv[0]}` },
        { buf: 'sV', stage: 0, bytes: vBytes, tile: `V${kv[0]}` },
      ]);
      for (let i = 0; i < n; i++) {
        const j = kv[i];
        r.wait(cp, i);
        r.sync(sync);
        if (i + 1 < n) {
          const s = (i + 1) % 2;
          const old = i >= 1 ? [release('sK', s, kBytes, `K${kv[i - 1]}`), release('sV', s, vBytes, `V${kv[i - 1]}`)] : [];
          group(
            [
              { buf: 'sK', stage: s, bytes: kBytes, tile: `K${kv[i + 1]}` },
              { buf: 'sV', stage: s, bytes: vBytes, tile: `V${kv[i + 1]}` },
            ],
            old,
          );
        }
        r.exec(tensor, qk, `mma.sync S=Q·K${j}ᵀ`, `S${j}`, { phase: phase(['qk'], j, w) });
        softmax(j, i === 0);
        r.exec(tensor, pv, `mma.sync O+=P·V${j}`, `O${work.qBlock}`, { phase: phase(['pv'], j, w) });
      }
      if (lead) {
        const s = (n - 1) % 2;
        r.mem(release('sK', s, kBytes, `K${kv[n - 1]}`));
        r.mem(release('sV', s, vBytes, `V${kv[n - 1]}`));
        if (n >= 2) {
          r.mem(release('sK', 1 - s, kBytes, `K${kv[n - 2]}`));
          r.mem(release('sV', 1 - s, vBytes, `V${kv[n - 2]}`));
        }
      }
    }
    // Epilogue: O / l (or keep O unnormalized with its LSE for the combine), write out.
    r.exec(`fma.sp${sp}`, (rows * shape.dv * 2) / (gpu.fmaPerClk / 4), cfg.writesPartial ? 'O / l, LSE' : 'O / l, cvt', `O${work.qBlock}`, {
      phase: phase(['normalize'], null, w),
    });
    const outBytes = cfg.writesPartial ? rows * partialRowBytes(shape.dv) : rows * shape.dv * e;
    r.issue(
      'store',
      copy(outBytes),
      cfg.writesPartial ? `st.global Opartial+LSE split ${work.split}` : `st.global O${work.qBlock}`,
      `O${work.qBlock}`,
      {
        phase: phase(['write'], null, w, [cfg.writesPartial ? 'Opartial' : 'O']),
        latency: gpu.copyLatencyCycles,
        memDone: [hbmOut(shape, work, work.qBlock * cfg.blockM + w * rows, rows, `O${work.qBlock}`, cfg.writesPartial, cfg.splits)],
      },
    );
  }
}

export function mmaSyncRate(gpu: GpuSpec, shape: ProblemShape, fp16Acc = false): number {
  const base = fp16Acc && shape.dtype === 'fp16' ? gpu.tensorFlopsPerClkFp16Acc : tensorRate(gpu, shape.dtype);
  return base * gpu.mmaSyncFraction;
}

export { SOFTMAX_FMA_OPS };

/** The SM80-style kernels' step-map geometry: one CTA of block_m rows, each warp (a role of the sheet) its share. */
export function warpTiledGeometry(sheet: ResourceSheet): { ctaRows: number; subRows: number } {
  return { ctaRows: sheet.tiles.block_m, subRows: Math.max(1, Math.floor(sheet.tiles.block_m / Math.max(1, sheet.roles.length))) };
}
