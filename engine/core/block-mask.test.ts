import { describe, expect, it } from 'vitest';
import { BLOCK_EMPTY, BLOCK_FULL, BLOCK_PARTIAL, blockMask, elementDensity, tileVisibleCount } from './block-mask.ts';
import { maskSpecFrom } from './mask-presets.ts';
import type { AttentionProblem } from './problem.ts';

function problem(over: Partial<AttentionProblem>): AttentionProblem {
  return { batch: 2, hq: 4, hk: 4, nq: 64, nk: 64, d: 32, dv: 32, causal: false, dtype: 'fp16', ...over };
}

describe('block mask', () => {
  it('one tile pair: a causal diagonal 16×16 tile keeps 136 of 256 scores (16·17/2), a ragged last tile counts only its rows and keys, a document mask sums to the squares of its documents', () => {
    const p = problem({ causal: true, nq: 40, nk: 40 });
    expect(tileVisibleCount(p, 16, 16, { q: 1, kv: 1, b: 0, h: 0 })).toEqual({ visible: 136, total: 256 });
    expect(tileVisibleCount(p, 16, 16, { q: 1, kv: 0, b: 0, h: 0 })).toEqual({ visible: 256, total: 256 });
    expect(tileVisibleCount(p, 16, 16, { q: 0, kv: 1, b: 0, h: 0 })).toEqual({ visible: 0, total: 256 });
    // Rows 32–39 by keys 32–39: the 8×8 corner's lower triangle.
    expect(tileVisibleCount(p, 16, 16, { q: 2, kv: 2, b: 0, h: 0 })).toEqual({ visible: 36, total: 64 });
    const doc = problem({ nq: 100, nk: 100, mask: maskSpecFrom({ maskMod: 'document:40,60' }, { hq: 4, nq: 100, nk: 100 }) });
    let sum = 0;
    for (let i = 0; i < 7; i++) for (let j = 0; j < 7; j++) sum += tileVisibleCount(doc, 16, 16, { q: i, kv: j, b: 0, h: 0 }).visible;
    // Two documents of 40 and 60 keys, no causal part: 40² + 60² pairs per (batch, head).
    expect(sum).toBe(40 * 40 + 60 * 60);
    expect(sum * 8).toBe(elementDensity(doc).visible);
  });

  it('causal at 16×16: the diagonal is partial, below it full, above it empty (closed form)', () => {
    const p = problem({ mask: maskSpecFrom({ maskMod: 'causal' }, { hq: 4, nq: 64, nk: 64 }) });
    const bm = blockMask(p, 16, 16);
    expect([bm.batch, bm.heads, bm.qBlocks, bm.kvBlocks]).toEqual([1, 1, 4, 4]);
    for (let i = 0; i < 4; i++)
      for (let j = 0; j < 4; j++) expect(bm.state[i * 4 + j]).toBe(i === j ? BLOCK_PARTIAL : j < i ? BLOCK_FULL : BLOCK_EMPTY);
    // 6 of 16 tiles empty, for every one of the 8 (batch, head) pairs.
    expect(bm.counts).toEqual({ empty: 48, partial: 32, full: 48 });
    expect(bm.density).toBe(10 / 16);
    expect(bm.skippedFlops).toBe(48 * 2 * 16 * 16 * 64);
    expect(bm.skippedBytes).toBe(48 * 16 * 64 * 2);
    expect(Array.from(bm.maskBlockCnt)).toEqual([1, 1, 1, 1]);
    expect(Array.from(bm.fullBlockCnt)).toEqual([0, 1, 2, 3]);
    expect(Array.from(bm.fullBlockIdx.subarray(12, 15))).toEqual([0, 1, 2]);
  });

  it('the built-in causal flag gives the same block mask as the causal preset', () => {
    const a = blockMask(problem({ causal: true, nq: 50, nk: 70 }), 16, 32);
    const b = blockMask(problem({ nq: 50, nk: 70, mask: maskSpecFrom({ maskMod: 'causal' }, { hq: 4, nq: 50, nk: 70 }) }), 16, 32);
    expect(Array.from(a.state)).toEqual(Array.from(b.state));
  });

  it('cnt/idx rebuild the dense states of a per-head mask, and agree with the element mask', () => {
    const p = problem({ nq: 40, nk: 56, mask: { maskMod: '(kv_idx + 7 * h) % 24 < 5 || b == 1 && q_idx < 8' } });
    const bm = blockMask(p, 16, 16);
    expect([bm.batch, bm.heads]).toEqual([2, 4]);
    for (let b = 0; b < 2; b++)
      for (let h = 0; h < 4; h++)
        for (let i = 0; i < bm.qBlocks; i++) {
          const row = (b * 4 + h) * bm.qBlocks + i;
          for (let j = 0; j < bm.kvBlocks; j++) {
            let seen = 0;
            let cells = 0;
            for (let q = i * 16; q < Math.min(40, i * 16 + 16); q++)
              for (let k = j * 16; k < Math.min(56, j * 16 + 16); k++) {
                cells++;
                if ((k + 7 * h) % 24 < 5 || (b === 1 && q < 8)) seen++;
              }
            const want = seen === 0 ? BLOCK_EMPTY : seen === cells ? BLOCK_FULL : BLOCK_PARTIAL;
            expect(bm.state[row * bm.kvBlocks + j], `b${b} h${h} ${i},${j}`).toBe(want);
            const inFull = Array.from(bm.fullBlockIdx.subarray(row * bm.kvBlocks, row * bm.kvBlocks + bm.fullBlockCnt[row])).includes(j);
            const inMask = Array.from(bm.maskBlockIdx.subarray(row * bm.kvBlocks, row * bm.kvBlocks + bm.maskBlockCnt[row])).includes(j);
            expect([inFull, inMask]).toEqual([want === BLOCK_FULL, want === BLOCK_PARTIAL]);
          }
        }
  });

  it('refuses a problem too large to evaluate pair by pair', () => {
    expect(() => blockMask(problem({ batch: 4, hq: 16, nq: 8192, nk: 8192, mask: { maskMod: 'h == 0' } }), 128, 128)).toThrow(RangeError);
  });

  it('element density: the visible (query, key) pairs, which a tile spanning every key cannot show', () => {
    // Two documents of 40 and 60 tokens: 40² + 60² of 100² pairs; one row block of all 100 keys is partial, so its block density reads 1.
    const doc = problem({ nq: 100, nk: 100, mask: maskSpecFrom({ maskMod: 'document:40,60' }, { hq: 4, nq: 100, nk: 100 }) });
    expect(elementDensity(doc)).toEqual({ visible: 8 * 5200, total: 8 * 10000, density: 0.52 });
    expect(blockMask(doc, 16, 100).density).toBe(1);
    // Causal with Nk 12 > Nq 8 (bottom-right): row i sees 5 + i keys.
    expect(elementDensity(problem({ nq: 8, nk: 12, causal: true })).visible).toBe(8 * (5 * 8 + 28));
    // A per-head mask: head h sees keys below 10·(h + 1), the four heads' 10, 20, 30, 40 of 64, per row.
    const perHead = problem({ batch: 1, mask: { maskMod: 'kv_idx < 10 * (h + 1)' } });
    expect(elementDensity(perHead).visible).toBe(64 * (10 + 20 + 30 + 40));
    expect(elementDensity(problem({})).density).toBe(1);
  });
});
