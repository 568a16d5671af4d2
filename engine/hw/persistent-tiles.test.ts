// How simulate places tiles under a static persistent scheduler, against flash-attention 0251105a:
// StaticPersistentTileScheduler launches min(SMs, tiles) CTAs and CTA c runs tiles c, c + grid,
// c + 2·grid, … (flash_attn/cute/tile_scheduler.py l. 402-434: tile_idx += grid_dim; hopper/
// tile_scheduler.hpp l. 161-212: tile_idx + gridDim.x), whatever each tile costs. The dynamic and
// single-tile schedulers hand the next tile to whichever CTA frees first.

import { describe, expect, it } from 'vitest';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { ProblemShape } from './model.ts';
import { dealBatchesRoundRobin, MAX_GRID_CTAS } from './simulate.ts';
import { fa3Hw } from '../algorithms/fa3/schedule.ts';
import { fa4DispatchOf, fa4Hw } from '../algorithms/fa4/schedule.ts';
import { describeFor, simulateFor } from '../algorithms/schedule-registry.ts';
import { gpuById } from './gpus/index.ts';

/** One 128-row Q tile per sequence over seqused_k lengths: FA4 runs it on StaticPersistentTileScheduler (no mask, dense Q, no split). */
const varlenK = (seqlensK: number[]): ProblemShape => ({
  batch: seqlensK.length,
  hq: 1,
  hk: 1,
  nq: 128,
  nk: Math.max(...seqlensK),
  d: 128,
  dv: 128,
  dtype: 'bf16',
  causal: false,
  varlen: { seqlensK },
});

const cycles = (s: ProblemShape) => simulateFor('fa4', 'b200', s).cycles;

describe('FA4 StaticPersistentTileScheduler deals tiles round robin', () => {
  const long = 16384;
  const short = 128;
  it('picks the static persistent scheduler for these shapes (flash_fwd_sm100.py l. 293-294)', () => {
    expect(fa4DispatchOf(varlenK([long, short])).tileScheduler).toBe('StaticPersistentTileScheduler');
    expect(fa4Hw.staticPersistent?.(varlenK([long, short]), gpuById('b200'))).toBe(true);
    expect(fa4Hw.staticPersistent?.({ ...varlenK([long, short]), causal: true }, gpuById('b200'))).toBe(false);
  });

  it('149 tiles on 148 SMs: tile 148 goes to CTA 0, behind the long tile 0, not to the first CTA that frees', () => {
    const first148 = [long, ...Array<number>(147).fill(short)];
    const alone = cycles(varlenK(first148));
    const shortTile = cycles(varlenK(Array<number>(148).fill(short)));
    // CTA 0 runs tile 0 (128 blocks) then tile 148 (1 block); list scheduling would give tile 148 to a CTA done with its one block.
    expect(cycles(varlenK([...first148, short]))).toBe(alone + shortTile);
  });

  it('296 tiles with long tiles 0 and 148: both on CTA 0, one after the other', () => {
    const shorts = Array<number>(147).fill(short);
    const longTile = cycles(varlenK([long, ...shorts]));
    expect(cycles(varlenK([long, ...shorts, long, ...shorts]))).toBe(2 * longTile);
  });
});

describe('FA3 declares its static persistent scheduler where the launch template picks it (flash_fwd_launch_template.h l. 63-76)', () => {
  const base: ProblemShape = { batch: 1, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 128, dv: 128, dtype: 'fp16', causal: false };
  it('no mask, no split, no varlen: static; causal: dynamic; varlen: varlen dynamic', () => {
    const h100 = gpuById('h100');
    expect(fa3Hw.staticPersistent?.(base, h100)).toBe(true);
    expect(fa3Hw.staticPersistent?.({ ...base, causal: true }, h100)).toBe(false);
    expect(fa3Hw.staticPersistent?.({ ...base, batch: 2, varlen: { seqlensQ: [4096, 100] } }, h100)).toBe(false);
  });
});

describe('describe says how the static persistent scheduler deals its tiles', () => {
  it('FA4 and FA3 name the grid-stride lines', () => {
    const fa4 = describeFor('fa4', 'b200', varlenK([1024, 128])).upstream?.why.join('\n') ?? '';
    expect(fa4).toContain('tiles dealt round robin over min(SMs, tiles) CTAs (flash_attn/cute/tile_scheduler.py@0251105a l. 402-434');
    const base: ProblemShape = { batch: 1, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 128, dv: 128, dtype: 'fp16', causal: false };
    expect(describeFor('fa3', 'h100', base).upstream?.why.join('\n')).toContain(
      'static-persistent scheduler, grid 132 CTAs (l. 192-212: CTA c runs tiles c, c + 132, … in turn)',
    );
  });
});

describe('a counted grid (over MAX_GRID_CTAS) is dealt round robin too, in closed form', () => {
  it('dealBatchesRoundRobin: CTA i gets tiles i, i + G, … of the batches laid end to end, as listing them would give', () => {
    const perBatch = [5, 1, 1, 7, 2];
    for (const [batches, ctas] of [
      [7, 4],
      [13, 5],
      [3, 8],
      [10, 10],
    ]) {
      const listed = new Array<number>(ctas).fill(0);
      for (let t = 0; t < batches * perBatch.length; t++) listed[t % ctas] += perBatch[t % perBatch.length];
      expect(dealBatchesRoundRobin(perBatch, batches, ctas)).toEqual(listed);
    }
  });

  it('FA4 under a causal mask_mod (a non-causal kernel, static persistent; tiles of 2, 4, 6, 8 blocks): 16385 batches of 4 tiles, counted, take what one batch of 16385 heads takes, listed', () => {
    // Grid order is batch, head, m block: batch b's tiles are head b's in the one-batch problem.
    // With 4 tiles a batch and 148 CTAs (gcd 4), CTA i runs m block i mod 4 of every batch it gets.
    const mask = maskSpecFrom({ maskMod: 'causal' }, { hq: 1, nq: 1024, nk: 1024 });
    const s: ProblemShape = { batch: 16385, hq: 1, hk: 1, nq: 1024, nk: 1024, d: 128, dv: 128, dtype: 'bf16', causal: false, mask };
    expect(fa4DispatchOf(s).tileScheduler).toBe('StaticPersistentTileScheduler');
    expect(4 * s.batch).toBeGreaterThan(MAX_GRID_CTAS);
    const counted = simulateFor('fa4', 'b200', s);
    const listed = simulateFor('fa4', 'b200', { ...s, batch: 1, hq: s.batch, hk: s.batch });
    expect(counted.ctas).toBe(listed.ctas);
    expect(counted.cycles).toBe(listed.cycles);
  });
});
