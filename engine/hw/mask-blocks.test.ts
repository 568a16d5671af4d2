// The hardware model follows a mask_mod: each CTA of the grid visits exactly the K/V blocks
// where a hand-written predicate leaves a key visible, the kernel gets shorter as the mask
// gets sparser, and FA4 drops its 2-CTA pairs under block sparsity.

import { describe, expect, it } from 'vitest';
import { maskSpecFrom } from '../core/mask-presets.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { maskedKvBlocks } from './mask-blocks.ts';
import { kvBlocksOf } from './model.ts';
import { hwAlgorithmById, resolveFeatures, shapeOf, simulateFor } from '../algorithms/schedule-registry.ts';
import { gpuById } from './gpus/index.ts';

const n = 2048;
const base: AttentionProblem = { batch: 1, hq: 2, hk: 2, nq: n, nk: n, d: 128, dv: 128, causal: false, dtype: 'fp16' };
const dims = { hq: 2, nq: n, nk: n };
/** Documents of 700, 300 and 1048 tokens. */
const docOf = (pos: number): number => (pos < 700 ? 0 : pos < 1000 ? 1 : 2);
const docMask = maskSpecFrom({ maskMod: 'document:700,300' }, dims);

describe('the hardware grid follows the mask', () => {
  it("the attention chunk joins the mask_mod: one mask object under two chunk sizes gives each chunk's blocks", () => {
    // Rows 1024-1151 sit in document 2 (keys 1000-2047); a chunk of 1024 leaves keys 1024-2047, one of 256 keys 1024-1279.
    const rows = (attentionChunk: number) =>
      maskedKvBlocks(shapeOf({ ...base, mask: docMask, attentionChunk }), 0, 0, 1024, 1152, 128, 0, 16);
    expect(rows(1024)).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
    expect(rows(256)).toEqual([8, 9]);
  });

  for (const [algo, gpu] of [
    ['fa3', 'h100'],
    ['fa4', 'b200'],
  ] as const) {
    it(`${algo}: every CTA visits exactly the K/V blocks with a visible key`, () => {
      const shape = shapeOf({ ...base, mask: docMask });
      const a = hwAlgorithmById(algo);
      const g = gpuById(gpu);
      const f = resolveFeatures(a, {});
      const sheet = a.resources(g, shape, f);
      const rows = a.geometry?.(sheet, shape).ctaRows ?? sheet.tiles.block_m;
      const bn = sheet.tiles.block_n;
      // A CTA's blocks, over its K/V splits when the kernel splits.
      const byTile = new Map<string, number[]>();
      for (const w of a.grid(g, shape, f)) {
        const key = `${w.b}/${w.h}/${w.qBlock}`;
        byTile.set(key, [...(byTile.get(key) ?? []), ...kvBlocksOf(w)]);
      }
      let visited = 0;
      for (const [key, got] of byTile) {
        const r0 = Number(key.split('/')[2]) * rows;
        const r1 = Math.min(n, r0 + rows);
        const want: number[] = [];
        for (let j = 0; j * bn < n; j++) {
          let any = false;
          for (let i = r0; i < r1 && !any; i++)
            for (let c = j * bn; c < Math.min(n, (j + 1) * bn) && !any; c++) any = docOf(i) === docOf(c);
          if (any) want.push(j);
        }
        expect(
          got.sort((x, y) => x - y),
          key,
        ).toEqual(want);
        visited += want.length;
      }
      // The document mask empties some blocks: fewer visits than the same grid with every block.
      expect(visited).toBeLessThan(byTile.size * Math.ceil(n / bn));
    });
  }

  it('fa3: past the pair budget a mask of linear bounds still gives each CTA exactly its blocks', () => {
    // 16384² pairs is past what the grid evaluates pair by pair; a sliding window is bounds only.
    const N = 16384;
    const w = 1024;
    const shape = shapeOf({
      ...base,
      hq: 1,
      hk: 1,
      nq: N,
      nk: N,
      mask: maskSpecFrom({ maskMod: `sliding_window:${w}` }, { hq: 1, nq: N, nk: N }),
    });
    const a = hwAlgorithmById('fa3');
    const g = gpuById('h100');
    const f = resolveFeatures(a, {});
    const sheet = a.resources(g, shape, f);
    const rows = a.geometry?.(sheet, shape).ctaRows ?? sheet.tiles.block_m;
    const bn = sheet.tiles.block_n;
    let ctas = 0;
    for (const cta of a.grid(g, shape, f)) {
      const r0 = cta.qBlock * rows;
      const r1 = Math.min(N, r0 + rows);
      // Keys r0 - w … r1 - 1 are seen by some row of the CTA.
      const want: number[] = [];
      for (let j = 0; j * bn < N; j++) if (j * bn <= r1 - 1 && (j + 1) * bn - 1 >= r0 - w) want.push(j);
      expect(kvBlocksOf(cta).sort((x, y) => x - y)).toEqual(want);
      ctas++;
    }
    expect(ctas).toBe(N / rows);
  });

  it('fa3: a sparser mask gives a shorter kernel', () => {
    // Several waves of CTAs, so the kernel time is the sum of the CTAs' work, not its longest CTA.
    const big = { ...base, batch: 4, hq: 16, hk: 16 };
    const d16 = { hq: 16, nq: n, nk: n };
    const dense = simulateFor('fa3', 'h100', shapeOf(big)).time_us;
    const doc = simulateFor('fa3', 'h100', shapeOf({ ...big, mask: maskSpecFrom({ maskMod: 'document:700,300' }, d16) })).time_us;
    const window = simulateFor('fa3', 'h100', shapeOf({ ...big, mask: maskSpecFrom({ maskMod: 'sliding_window:128' }, d16) })).time_us;
    expect(doc).toBeLessThan(dense);
    expect(window).toBeLessThan(doc);
  });

  it('fa4: 2-CTA pairs on a dense problem, off under block sparsity (flash_attn/cute/interface.py@0251105a l. 829)', () => {
    const a = hwAlgorithmById('fa4');
    const g = gpuById('b200');
    const f = resolveFeatures(a, {});
    expect(a.resources(g, shapeOf(base), f).cta_group).toBe(2);
    expect(a.resources(g, shapeOf({ ...base, mask: docMask }), f).cta_group ?? 1).toBe(1);
  });
});

describe('FA3 under a mask_mod (hopper/ takes none: the model charges it as FA4 block-sparse does)', () => {
  const shape = shapeOf({ ...base, mask: docMask });
  const a = hwAlgorithmById('fa3');
  const g = gpuById('h100');
  const f = resolveFeatures(a, {});

  it('describe and the memory map say so, citing mha_fwd', () => {
    const sheet = a.resources(g, shape, f);
    const why = sheet.upstream?.why ?? [];
    expect(why.some((w) => w.startsWith('hopper/flash_api.cpp@0251105a l. 672-708: mha_fwd takes no mask_mod'))).toBe(true);
    expect(sheet.notes.some((n) => n.startsWith("FA3's kernel takes no mask_mod"))).toBe(true);
    const plain = a.resources(g, shapeOf(base), f);
    expect(plain.upstream?.why.some((w) => w.includes('no mask_mod'))).toBe(false);
    expect(plain.notes.some((n) => n.includes('mask_mod'))).toBe(false);
  });

  it('a Q tile across a document boundary runs the masking step on its partially masked blocks, not only the first', () => {
    const bm = a.resources(g, shape, f).tiles.block_m;
    // Rows 640-767 straddle the boundary at 700 (non-causal kernel: its own mask only checks the first block visited).
    const w = a.grid(g, shape, f).find((c) => c.h === 0 && c.qBlock * bm <= 700 && (c.qBlock + 1) * bm > 700);
    expect(w).toBeDefined();
    expect(a.maskedSteps?.(g, shape, f, w!)).toBeGreaterThan(1);
  });
});
