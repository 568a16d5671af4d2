// Chapter 14: masks written as functions, and the tiles they empty.
import type { Chapter, EngineRun } from './types.ts';
import { firstIndex, lessonRequest, type EventOf } from './queries.ts';
import type { TraceEvent } from '../../../engine/api.ts';

/** (Q tile, K/V tile) pairs of head (0, 0) the run computed a score tile for. */
function computed(events: readonly TraceEvent[]): Set<string> {
  const out = new Set<string>();
  for (const e of events) if (e.kind === 'qk' && e.b === 0 && e.h === 0) out.add(`${e.tile.qBlock},${e.tile.kvBlock}`);
  return out;
}

/** Computed pairs of head (0, 0) with a mask phase (partial tiles). */
function masked(events: readonly TraceEvent[]): Set<string> {
  const out = new Set<string>();
  for (const e of events) if (e.kind === 'mask' && e.b === 0 && e.h === 0) out.add(`${e.tile.qBlock},${e.tile.kvBlock}`);
  return out;
}

/** Three packed documents of 24, 16 and 24 tokens: the document id of a position, written with where(). */
const DOCUMENTS = 'where(q_idx < 24, 0, where(q_idx < 40, 1, 2)) == where(kv_idx < 24, 0, where(kv_idx < 40, 1, 2))';

/** Every query sees the first 16 keys, the rest causally. */
const PREFIX_LM = 'kv_idx < 16 || kv_idx <= q_idx';

/** Whether the loaded run has the chapter's document mask (the feedback speaks of documents only then). */
const isDocuments = (run: EngineRun) => run.request.problem.mask?.maskMod === DOCUMENTS;

const isMask = (e: TraceEvent): e is EventOf<'mask'> => e.kind === 'mask';

export const chapter14: Chapter = {
  number: 14,
  slug: 'masks-and-block-sparsity',
  title: 'Masks as functions, and the tiles they empty',
  summary: 'Write mask_mod and score_mod, predict which tiles are skipped, and check against the engine.',
  blocks: [
    {
      kind: 'p',
      text: 'Causal, sliding-window and document masks look different, but each one answers the same question for every pair of positions: may query $q$ look at key $k$? Written as a function, that is a mask_mod:',
    },
    {
      kind: 'math',
      tex: '\\mathrm{mask\\_mod}(b, h, q, k) \\in \\{\\text{keep}, \\text{mask}\\},\\qquad S_{qk} \\leftarrow -\\infty \\text{ where masked}',
    },
    {
      kind: 'p',
      text: 'A score_mod changes a kept score instead: ALiBi subtracts a per-head slope times the distance, a softcap squashes the score with $c\\tanh(s/c)$. PyTorch FlexAttention takes these two functions, and so do the CuTe kernels of flash-attention.',
    },
    { kind: 'h', text: 'From the mask to the tiles' },
    {
      kind: 'p',
      text: 'A tiled kernel works on $B_r \\times B_c$ tiles of $S$. For each pair (Q tile, K/V tile) the mask is either empty (every pair masked: the tile is never loaded, multiplied or exponentiated), full (nothing masked: no mask work at all) or partial (the mask runs inside it). These three states, per tile pair, are the block mask; upstream stores the partial and full tiles of each Q tile as count and index lists. The kernel walks only those lists, so its work follows the density — the fraction of tile pairs that are not empty.',
    },
    {
      kind: 'p',
      text: 'The debugger opens on a document mask: the sequence is three packed documents (24, 16 and 24 tokens), and a query sees only keys of its own document. The mask_mod computes the document of each position with where() and compares them: where(q_idx < 24, 0, where(q_idx < 40, 1, 2)) == where(kv_idx < 24, 0, …). (The Document mask preset does the same from a table of document ids, as packed batches with cu_seqlens need.) Before you step, predict from the tile boundaries (multiples of 16) which of the 16 tile pairs are empty, which are full and which are partial; then compare with the Block mask view and with the tiles the trace computes. It opens on the first mask phase: a partial tile, where a document boundary cuts through.',
    },
    {
      kind: 'p',
      text: 'In the problem panel you can write your own mask in the mask_mod box — any expression of b, h, q_idx, kv_idx, nq and nk with comparisons, &&, ||, arithmetic, min, max, abs, floor and where — and see the error under its column if it does not read.',
    },
  ],
  panes: [
    {
      preset: lessonRequest('fa2', { nq: 64, nk: 64, d: 16, mask: { maskMod: DOCUMENTS } }, { blockM: 16, blockN: 16 }),
      target: {
        describe: 'the first mask phase (a partial tile)',
        find: (ev) => firstIndex(ev, isMask),
      },
      views: ['heatmaps', 'block-mask', 'counters', 'pseudo'],
    },
  ],
  sources: [
    'mask_mod, score_mod and block-sparse tensors as kernel arguments: Dao-AILab/flash-attention, flash_attn/cute/interface.py@0251105a, l. 547–549.',
    'The block mask as count and index lists of partial and full K/V blocks: flash_attn/cute/block_sparsity.py@0251105a, l. 17–23.',
  ],
  tryThis: [
    {
      label: 'Sliding window of 16',
      look: 'A band along the diagonal: the tiles far below it become empty, and the band edges are partial.',
      change: (r) => ({ ...r, problem: { ...r.problem, mask: { maskMod: 'kv_idx <= q_idx && q_idx - kv_idx <= 16' } } }),
    },
    {
      label: 'Chunks of 32 (Llama 4)',
      look: 'Causal inside each chunk of 32 tokens: whole blocks between chunks are empty.',
      change: (r) => ({ ...r, problem: { ...r.problem, mask: { maskMod: 'floor(q_idx / 32) == floor(kv_idx / 32) && kv_idx <= q_idx' } } }),
    },
    {
      label: 'Prefix-LM, prefix 16',
      look: 'The first K/V tile is full for every query tile; the rest is causal.',
      change: (r) => ({ ...r, problem: { ...r.problem, mask: { maskMod: PREFIX_LM } } }),
    },
    {
      label: 'Dilated: every other key',
      look: 'No tile is empty or full — every tile is partial, so block sparsity saves nothing although half the scores are masked.',
      change: (r) => ({ ...r, problem: { ...r.problem, mask: { maskMod: '(q_idx - kv_idx) % 2 == 0' } } }),
    },
  ],
  questions: [
    {
      id: 'empty-tiles',
      prompt:
        'Of the tile pairs of this problem (four Q tiles by four K/V tiles), how many does the kernel skip entirely (no score tile computed)?',
      kind: 'integer',
      answer: ({ run }) => {
        const p = run.request.problem;
        const { blockM, blockN } = run.result.blocks;
        return Math.ceil(p.nq / blockM) * Math.ceil(p.nk / blockN) - computed(run.events).size;
      },
      explain: ({ run }, a) =>
        isDocuments(run)
          ? `${a} tile pairs hold no query/key pair of the same document, so they are never loaded or multiplied: the pairs whose Q rows and K/V columns fall in different documents only.`
          : `${a} tile pairs in which the loaded mask hides every query/key pair: they are never loaded or multiplied.`,
      hint: 'Mark where the mask changes on both axes (for the documents, 24 and 40) at the tile boundaries, multiples of 16; a tile pair is empty when the mask hides all of it, as when its Q rows and K/V columns share no document.',
    },
    {
      id: 'full-tiles',
      prompt: 'How many of the computed tile pairs are full — computed with no mask phase at all?',
      kind: 'integer',
      answer: ({ run }) => {
        const m = masked(run.events);
        return [...computed(run.events)].filter((t) => !m.has(t)).length;
      },
      explain: ({ run }, a) =>
        isDocuments(run)
          ? `${a} computed tiles lie wholly inside one document, so every score in them is kept and the kernel skips the mask there. The others are cut by a document boundary and run the mask.`
          : `${a} computed tiles keep every score under the loaded mask, so the kernel skips the mask there; the others hold both kept and hidden scores and run it.`,
      hint: 'A full tile is one the mask keeps whole, as when all its rows and columns lie inside one document; a tile that a boundary crosses is partial.',
    },
    {
      id: 'partial-tiles',
      prompt:
        'Load **Prefix-LM, prefix 16** (Try this): every query sees the first 16 keys, and the rest causally. Predict how many tile pairs are partial (computed with a mask phase), then check.',
      kind: 'integer',
      answer: ({ run }) => masked(run.events).size,
      explain: ({ run }, a) => {
        const pairs = [...masked(run.events)].map((t) => `(${t})`).join(', ');
        const why =
          run.request.problem.mask?.maskMod === PREFIX_LM
            ? ' Under the prefix mask, K/V tile 0 lies inside the prefix and is full for every Q tile, (0, 0) included, although it sits on the diagonal; only the other diagonal tiles are cut by the causal edge.'
            : ' This is the loaded mask; load Prefix-LM to answer for it.';
        return `${a}: ${pairs || 'none'}, as (Q tile, K/V tile). A partial tile holds kept and hidden scores alike, so the mask runs inside it.${why}`;
      },
      hint: 'A tile pair is partial when the mask keeps some of its scores and hides others; keys 0–15 are kept for every query.',
    },
  ],
};
