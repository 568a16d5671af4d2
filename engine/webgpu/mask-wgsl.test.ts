// The WGSL emitted from mask trees (what the kernels compile; their numerics are checked on
// SwiftShader in mask-gpu.test.ts) and the block list the block-sparse kernels walk.

import { describe, expect, it } from 'vitest';
import { BLOCK_FULL, BLOCK_PARTIAL, blockMask } from '../core/block-mask.ts';
import { maskSpecFrom } from '../core/mask-presets.ts';
import { checkMaskSpec } from '../core/mask-spec.ts';
import { DEFAULT_PROBLEM, type AttentionProblem } from '../core/problem.ts';
import { FULL_FLAG, blockListWords } from './block-list.ts';
import { maskWgsl } from './mask-wgsl.ts';
import { scoreSpec, scoreWgsl } from './params.ts';

const body = (code: string, fn: string) => new RegExp(`fn ${fn}\\([^)]*\\) -> \\w+ \\{\\n  return (.*);\\n\\}`).exec(code)?.[1];

describe('mask_mod / score_mod to WGSL', () => {
  it('emits from the tree: names, operators and numbers re-spelled, aux arrays as offsets into one buffer', () => {
    const w = maskWgsl(
      checkMaskSpec({
        maskMod: 'zeta[kv_idx] === alpha[q_idx] & kv_idx <= q_idx + (nk - nq)',
        aux: { zeta: [3, 1, 2], alpha: [7, 8] },
      }),
    );
    const mask = body(w.code, 'user_mask');
    // alpha sorts first: offset 0, length 2; zeta at offset 2, length 3.
    expect(mask).toBe(
      '((bitcast<i32>(mask_aux[2u + u32(clamp(kv_idx, 0i, 2i))]) == bitcast<i32>(mask_aux[0u + u32(clamp(q_idx, 0i, 1i))])) && (kv_idx <= (q_idx + (i32(params.nk) - i32(params.nq)))))',
    );
    expect(w.code).not.toMatch(/zeta|alpha|===|[^&]&[^&]/);
    expect(Array.from(w.auxWords)).toEqual([7, 8, 3, 1, 2]);
    expect(w.readsAux).toBe(true);
    expect(w.code).toContain('@binding(8) var<storage, read> mask_aux');
  });

  it('keeps whole numbers in i32 (floor of a quotient as an integer division) and the rest in f32', () => {
    const w = maskWgsl(
      checkMaskSpec({
        maskMod: 'floor(q_idx / 64) == floor(kv_idx / 64) && (q_idx - kv_idx) % 3 != 0',
        scoreMod: 'where(h > 1, score * 0.5, score - slope[h] * abs(q_idx - kv_idx))',
        aux: { slope: [0.25, 0.5, 0.125] },
      }),
    );
    expect(body(w.code, 'user_mask')).toBe(
      '((mask_floor_div(q_idx, 64i) == mask_floor_div(kv_idx, 64i)) && (mask_rem((q_idx - kv_idx), 3i) != 0i))',
    );
    expect(body(w.code, 'user_score')).toBe(
      'select((score - (bitcast<f32>(mask_aux[0u + u32(clamp(h, 0i, 2i))]) * f32(abs((q_idx - kv_idx))))), (score * f32(5e-1)), (h > 1i))',
    );
    // f32 aux entries travel as their bits.
    expect(Array.from(new Float32Array(w.auxWords.buffer))).toEqual([0.25, 0.5, 0.125]);
  });

  it('refuses a number the GPU cannot hold rather than emitting infinity', () => {
    expect(() => maskWgsl(checkMaskSpec({ scoreMod: 'score + 1e300' }))).toThrow(/does not fit the GPU's 32-bit floats/);
  });

  it('puts the mask in the edge path only, and makes every tile an edge tile for a dense run', () => {
    const p: AttentionProblem = { ...DEFAULT_PROBLEM, hq: 2, hk: 2, mask: { maskMod: 'kv_idx % 2 == 0', scoreMod: 'score + 1' } };
    const code = scoreWgsl(scoreSpec(p));
    const full = /fn score_full[\s\S]*?\n\}/.exec(code)![0];
    const edge = /fn score_edge[\s\S]*?\n\}/.exec(code)![0];
    expect(full).not.toContain('user_mask');
    expect(full).toContain('user_score');
    expect(edge).toContain('!user_mask(mask_b(), i32(h), i32(i), i32(j))');
    expect(code).toMatch(/if \(j1 > params\.nk \|\| true\) \{ return false; \}/);
  });
});

describe('block list', () => {
  it('lists the partial K/V tiles of each Q tile, then the full ones (flagged), a ragged last tile always partial', () => {
    const nq = 64;
    const nk = 72; // the last 16-key tile holds 8 keys
    const p: AttentionProblem = { ...DEFAULT_PROBLEM, nq, nk, mask: maskSpecFrom({ maskMod: 'prefix_lm:20' }, { hq: 1, nq, nk }) };
    const bm = blockMask(p, 16, 16);
    const words = blockListWords(bm, nk);
    const stride = 2 + bm.kvBlocks;
    const flagged = (j: number) => (j | FULL_FLAG) >>> 0;
    for (let i = 0; i < bm.qBlocks; i++) {
      const listed = Array.from(words.subarray(i * stride + 2, i * stride + 2 + words[i * stride]));
      const partial: number[] = [];
      const full: number[] = [];
      for (let j = 0; j < bm.kvBlocks; j++) {
        const s = bm.state[i * bm.kvBlocks + j];
        if (s === BLOCK_PARTIAL || (s === BLOCK_FULL && (j + 1) * 16 > nk)) partial.push(j);
        else if (s === BLOCK_FULL) full.push(flagged(j));
      }
      expect(listed).toEqual([...partial, ...full]);
      expect(words[i * stride + 1]).toBe(partial.length);
      expect(words[i * stride]).toBe(bm.maskBlockCnt[i] + bm.fullBlockCnt[i]);
    }
    // Query tile 3 (positions 56..71): the diagonal tile and the ragged tile 4 partial, keys 0..47 full.
    expect(Array.from(words.subarray(3 * stride, 4 * stride))).toEqual([5, 2, 3, 4, flagged(0), flagged(1), flagged(2)]);
    // A mask that keeps everything: every tile full in the block mask, the ragged one still listed as partial.
    const all = blockMask({ ...p, mask: { maskMod: 'kv_idx >= 0' } }, 16, 16);
    expect(all.counts.full).toBe(all.qBlocks * all.kvBlocks);
    expect(Array.from(blockListWords(all, nk).subarray(0, stride))).toEqual([5, 1, 4, flagged(0), flagged(1), flagged(2), flagged(3)]);
  });
});
