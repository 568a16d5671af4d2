// The K/V blocks a CTA loads under a mask_mod: the hardware model reads the same mask the
// stepper does, so a block-sparse kernel's CTA visits only the blocks with a visible key
// (upstream's mask_block_idx and full_block_idx together, flash_attn/cute/block_sparsity.py@0251105a l. 17–23).

import { checkMaskSpec } from '../core/mask-spec.ts';
import type { AttentionProblem } from '../core/problem.ts';
import { blockFullyVisible, blockHasVisible, scoreModel, type ScoreModel } from '../core/scores.ts';
import type { ProblemShape } from './model.ts';

/** Mask pairs a grid may evaluate before it falls back to the causal/window range (a page must not freeze); bounds cost nothing per pair. */
const MAX_GRID_MASK_PAIRS = 1 << 26;

interface MaskGridModel {
  sm: ScoreModel;
  perHead: boolean;
  /** Block lists already found, by (b, h, rows, blocks) key: a mask that ignores b and h is evaluated once per tile. */
  lists: Map<string, number[]>;
  /** Those lists split into partial and full blocks, by the same key. */
  sparse: Map<string, SparseKvBlocks>;
}

const models = new WeakMap<object, Map<string, MaskGridModel | null>>();

function modelOf(shape: ProblemShape): MaskGridModel | null {
  const mask = shape.mask;
  if (mask?.maskMod === undefined) return null;
  const key = `${shape.batch}/${shape.hq}/${shape.hk}/${shape.nq}/${shape.nk}/${shape.packRatio ?? 1}/${shape.causal}/${shape.window?.left}/${shape.window?.right}/${shape.attentionChunk}`;
  let byShape = models.get(mask);
  if (!byShape) models.set(mask, (byShape = new Map()));
  const hit = byShape.get(key);
  if (hit !== undefined) return hit;
  const perHead = checkMaskSpec(mask).maskReadsBatchOrHead;
  const r = shape.packRatio ?? 1;
  const nq = shape.nq / r;
  const pairs = (perHead ? shape.batch * shape.hq * r : 1) * nq * shape.nk;
  const p: AttentionProblem = { ...shape, hq: shape.hq * r, nq, causal: shape.causal, mask };
  const sm = scoreModel(p);
  // A mask that is all linear bounds costs one range per row, at any size.
  const model: MaskGridModel | null =
    pairs <= MAX_GRID_MASK_PAIRS || sm.maskMod === undefined ? { sm, perHead, lists: new Map(), sparse: new Map() } : null;
  byShape.set(key, model);
  return model;
}

/**
 * The K/V blocks of [from, to) where some key is visible to the CTA's (packed) rows [m0, m1)
 * of batch b, KV-packed head h; undefined when the shape has no mask_mod (the range is exact).
 */
export function maskedKvBlocks(
  shape: ProblemShape,
  b: number,
  h: number,
  m0: number,
  m1: number,
  blockN: number,
  from: number,
  to: number,
): number[] | undefined {
  const t = tileOf(shape, b, h, m0, m1, blockN, from, to);
  if (!t) return undefined;
  const hit = t.model.lists.get(t.key);
  if (hit) return hit;
  const list: number[] = [];
  for (let j = from; j < to; j++)
    if (t.heads.some((hq) => blockHasVisible(t.model.sm, t.q0, t.q1, ...t.cols(j), shape.nk, t.b, hq))) list.push(j);
  t.model.lists.set(t.key, list);
  return list;
}

/** A block-sparse CTA's K/V blocks as upstream lists them: partial (mask_block_idx) and full (full_block_idx), ascending. */
export interface SparseKvBlocks {
  /** maskedKvBlocks' list: both together. */
  all: number[];
  partial: number[];
  full: number[];
}

/**
 * maskedKvBlocks' list split into partial blocks and full ones, where every key in bounds is
 * visible to every row in bounds: upstream's full blocks need no mask_mod
 * (compute_block_sparsity.py@0251105a l. 199-319: rows past seqlen_q and columns past seqlen_k
 * are not evaluated); undefined when the shape has no mask_mod.
 */
export function sparseKvBlocks(
  shape: ProblemShape,
  b: number,
  h: number,
  m0: number,
  m1: number,
  blockN: number,
  from: number,
  to: number,
): SparseKvBlocks | undefined {
  const t = tileOf(shape, b, h, m0, m1, blockN, from, to);
  if (!t) return undefined;
  const hit = t.model.sparse.get(t.key);
  if (hit) return hit;
  const out: SparseKvBlocks = { all: maskedKvBlocks(shape, b, h, m0, m1, blockN, from, to) ?? [], partial: [], full: [] };
  for (const j of out.all) {
    const full = t.heads.every((hq) => blockFullyVisible(t.model.sm, t.q0, t.q1, ...t.cols(j), shape.nk, t.b, hq));
    (full ? out.full : out.partial).push(j);
  }
  t.model.sparse.set(t.key, out);
  return out;
}

/** The query rows, heads and cache key of one CTA's tile under the shape's mask model. */
function tileOf(shape: ProblemShape, b: number, h: number, m0: number, m1: number, blockN: number, from: number, to: number) {
  const model = modelOf(shape);
  if (!model) return undefined;
  const r = shape.packRatio ?? 1;
  const q0 = Math.floor(m0 / r);
  const q1 = Math.ceil(m1 / r);
  const key = model.perHead ? `${b}/${h}/${q0}/${q1}/${from}/${to}/${blockN}` : `${q0}/${q1}/${from}/${to}/${blockN}`;
  const heads = model.perHead ? Array.from({ length: r }, (_, k) => h * r + k) : [0];
  const cols = (j: number): [number, number] => [j * blockN, Math.min(shape.nk, (j + 1) * blockN)];
  return { model, q0, q1, key, heads, cols, b: model.perHead ? b : 0 };
}
