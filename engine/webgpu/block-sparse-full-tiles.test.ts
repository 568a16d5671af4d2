// Block-sparse kernels run no mask on a full tile (as upstream's full_block_cnt/idx tiles,
// flash_attn/cute/block_sparsity.py@0251105a l. 17–23): in each kernel's WGSL, the code a tile
// flagged full runs reaches neither the mask_mod, the built-in masks nor the Nk bounds test,
// while the partial tiles' code does. Their numerics: mask-gpu.test.ts on SwiftShader.

import { describe, expect, it } from 'vitest';
import { blockMask } from '../core/block-mask.ts';
import { DEFAULT_PROBLEM, type AttentionProblem } from '../core/problem.ts';
import { blockListWgsl, groupBlockListWgsl } from './block-list.ts';
import { chooseDecodeGroup, decodeGroupKernelWgsl, groupTileKeys } from './decode-group-kernel.ts';
import { sparseDecodeKernelWgsl, SPARSE_DECODE_BN } from './decode-sparse-kernel.ts';
import { flashKernelWgsl } from './flash-kernel.ts';
import { H200_MATRIX_CONTEXT } from './h200-matrix-context.ts';
import { chooseMatrixTile, matrixKernelWgsl } from './flash-matrix-kernel.ts';
import { chooseRowConfig, rowKernelWgsl } from './flash-row-kernel.ts';
import { scoreSpec } from './params.ts';
import { chooseFlashTile } from './tiles.ts';

/** Calls that test a mask: the mask_mod, the built-in causal/window test, the masking score functions. */
const MASK_CALLS = ['user_mask(', 'key_visible(', 'tile_visible(', 'score_edge(', 'score_mod('];

/** The text from `start` to the first `end` after it. */
function between(code: string, start: string, end: string): string {
  const i = code.indexOf(start);
  expect(i, start).toBeGreaterThanOrEqual(0);
  const j = code.indexOf(end, i + start.length);
  expect(j, end).toBeGreaterThan(i);
  return code.slice(i + start.length, j);
}

/** The bodies of the score functions a segment calls. */
function calledScores(code: string, segment: string): string {
  const called = new Set([...segment.matchAll(/\b(score_\w+)\(/g)].map((m) => m[1]));
  return [...called].map((f) => between(code, `fn ${f}(`, '\n}\n')).join('\n');
}

function expectNoMaskOnFull(code: string, full: string, partial: string): void {
  const scores = calledScores(code, full);
  for (const t of MASK_CALLS) expect(full + scores, t).not.toContain(t);
  // Nor the bounds test on keys: a full tile holds BN keys below Nk (the staging's load guards are not score work).
  expect(scores).not.toContain('params.nk');
  expect(partial + calledScores(code, partial)).toContain('user_mask(');
}

// A mask_mod with a score_mod (full tiles still run the score_mod) and the built-in causal mask.
const p: AttentionProblem = {
  ...DEFAULT_PROBLEM,
  nq: 256,
  nk: 256,
  d: 64,
  dv: 64,
  causal: true,
  mask: { maskMod: 'kv_idx % 3 != 1 || q_idx - kv_idx < 40', scoreMod: 'score + 0.5' },
};
const score = scoreSpec(p);
const list = (bm: number, bn: number) => blockListWgsl(blockMask(p, bm, bn));

describe('block-sparse kernels on full tiles', () => {
  it('the row kernel: a tile flagged full scores with score_full', () => {
    const c = chooseRowConfig({ maxWorkgroupStorage: 16384, maxInvocations: 256 }, { elem: 'f32', d: 32, dv: 32, score, subgroupMin: 0 })!;
    const code = rowKernelWgsl({ ...c, d: 32, dv: 32, blockList: list(64, c.bc) });
    expect(code).toContain('let full = (bentry & BLOCK_FULL_FLAG) != 0u;');
    expectNoMaskOnFull(code, between(code, 'if (full) {', '\n      } else {'), between(code, '\n      } else {', '\n      }\n'));
  });

  it('the 4×4-tiled kernel: a tile flagged full scores with score_unmasked', () => {
    const c = chooseFlashTile({ limits: { maxWorkgroupStorage: 16384, maxInvocations: 256 } } as never, {
      elem: 'f32',
      subgroup: 0,
      d: 80,
      dv: 80,
      user: score.user,
    });
    const code = flashKernelWgsl({ ...c, blockList: list(c.bm, c.bn) });
    expectNoMaskOnFull(code, between(code, 'if (full) {', '} else {'), between(code, '} else {', '}\n'));
  });

  const h200 = H200_MATRIX_CONTEXT;
  const loops = (code: string) => code.match(/for \(var bt = /g)?.length;

  it('the subgroup-matrix kernel sharing its SM (d 64): the full tiles run in a loop of their own without mask tests', () => {
    const c = chooseMatrixTile(h200, { d: 64, dv: 64, nq: 256 }, score, true);
    const code = matrixKernelWgsl({ ...c, blockList: list(c.warps * c.m, c.bn) });
    expect(loops(code)).toBe(2);
    const partial = between(code, 'for (var bt = 0u; bt < bpartial; bt++) {', 'for (var bt = bpartial; bt < bcount; bt++) {');
    expectNoMaskOnFull(code, between(code, 'for (var bt = bpartial; bt < bcount; bt++) {', 'if (again)'), partial);
  });

  it('the subgroup-matrix kernel alone on its SM (d 128): one loop over the list, a full tile branches to the softmax without mask tests', () => {
    const c = chooseMatrixTile(h200, { d: 128, dv: 128, nq: 256 }, score, true);
    const code = matrixKernelWgsl({ ...c, blockList: list(c.warps * c.m, c.bn) });
    expect(loops(code)).toBe(1);
    const body = between(code, 'for (var bt = 0u; bt < bcount; bt++) {', 'if (again)');
    expectNoMaskOnFull(code, between(body, 'if (bt >= bpartial) {', '} else {'), between(body, '} else {', 'l = l * alpha + sum;'));
  });

  it('block-sparse decoding: a tile flagged full scores with score_full', () => {
    const code = sparseDecodeKernelWgsl(64, 64, score, blockListWgsl(blockMask({ ...p, nq: 1 }, 1, SPARSE_DECODE_BN)));
    expectNoMaskOnFull(code, between(code, 'if (tile_full[j / BN] != 0u) {', '} else {'), between(code, '} else {', '}\n'));
  });

  it('block-sparse decoding on the group layout: a head that sees the whole tile scores with score_full', () => {
    const q = { ...p, nq: 1, hq: 4, hk: 2 };
    const g = chooseDecodeGroup(q, scoreSpec(q), 32)!;
    const code = decodeGroupKernelWgsl({
      ...g,
      blockList: { wgsl: groupBlockListWgsl(blockMask(q, 1, groupTileKeys(g))), bn: groupTileKeys(g) },
    });
    const [full, partial] = between(code, 'if (full) {', '\n').split('} else {');
    expectNoMaskOnFull(code, full, partial);
  });
});
