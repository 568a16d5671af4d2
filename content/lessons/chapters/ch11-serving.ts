// Chapter 11: serving layouts — packed variable-length batches, the paged K/V cache, and
// where flash-decoding's splits fall on pages. The questions run engine/layouts.
import type { Chapter } from './types.ts';
import { firstIndex, fmt, fmtBytes, lessonRequest } from './queries.ts';
import {
  algorithmById,
  randomInputs,
  type AttentionProblem,
  runToEnd,
  generateServing,
  DEFAULT_SERVING_FORM,
  type ServingForm,
  runLayoutToEnd,
  runVarlen,
  runPaged,
  type TraceEvent,
} from '../../../engine/api.ts';

const PACK_LENGTHS = [40, 160, 8, 120];
export const PAGED_FORM: ServingForm = {
  ...DEFAULT_SERVING_FORM,
  layout: 'paged',
  algorithm: 'flash-decoding',
  seqlensK: [70, 5, 33],
  pageSize: 16,
  nq: 1,
  causal: false,
  splits: 3,
};

/** Matmul FLOPs of FA2 on the packed batch and on the same batch padded to its longest sequence. */
function packingFlops(): { packed: number; padded: number } {
  const form: ServingForm = {
    ...DEFAULT_SERVING_FORM,
    layout: 'varlen',
    seqlensQ: PACK_LENGTHS,
    seqlensK: PACK_LENGTHS,
    hq: 1,
    hk: 1,
    d: 16,
    causal: false,
  };
  const sp = generateServing(form);
  if (sp.layout !== 'varlen') throw new Error('varlen expected');
  const fa2 = algorithmById('fa2');
  const blocks = { blockM: 16, blockN: 16 };
  const packed = runLayoutToEnd(runVarlen(fa2, sp.vp, sp.x, { trace: false, ...blocks })).counters.matmulFlops;
  const n = Math.max(...PACK_LENGTHS);
  const p: AttentionProblem = { ...sp.vp.base, batch: PACK_LENGTHS.length, nq: n, nk: n };
  const padded = runToEnd(fa2, p, randomInputs(p, { seed: 1 }), blocks).counters.matmulFlops;
  return { packed, padded };
}

function pagedCounters() {
  const sp = generateServing(PAGED_FORM);
  if (sp.layout !== 'paged') throw new Error('paged expected');
  const run = runPaged(algorithmById('flash-decoding'), sp.pp, sp.x, { trace: false, features: { splits: PAGED_FORM.splits } });
  const r = runLayoutToEnd(run.gen);
  return { counters: r.counters, touched: run.touched.size };
}

const kvLoad = (e: TraceEvent) => e.kind === 'load' && e.tensors.includes('K');
const splitOf = (e: TraceEvent) => e.split ?? 0;

export const chapter11: Chapter = {
  number: 11,
  slug: 'serving-layouts',
  title: 'Serving layouts: packed batches and paged K/V caches',
  summary:
    'Sequences packed without padding, K/V kept in pages behind a block table, and flash-decoding splits that end on page boundaries.',
  blocks: [
    {
      kind: 'p',
      text: "An inference server batches requests of very different lengths. Padding them to the longest one wastes the work on the padding; instead the rows of all sequences are concatenated into one tensor, $Q$ of shape $[\\text{total}_q, H_q, d]$, and a vector of offsets, cu_seqlens $= [0, n_0, n_0 + n_1, \\dots]$, says where each sequence starts. Nothing else changes: the grid runs over (Q tile, sequence, head), every thread block reads its sequence's two offsets and then runs the dense kernel on that sequence alone. Causal and window masks are per sequence, aligned bottom-right inside it.",
    },
    {
      kind: 'math',
      tex: '\\text{work}_{\\text{packed}} \\propto \\sum_b n_{q,b}\\, n_{k,b} \\qquad\\text{against}\\qquad \\text{work}_{\\text{padded}} \\propto B \\cdot \\max_b n_{q,b} \\cdot \\max_b n_{k,b}',
    },
    {
      kind: 'p',
      text: "A sequence's tiles start at its own first row. When its length is not a multiple of $B_r$, its last tile reaches past its end — in the packed tensor, into the next sequence's rows. Those rows are predicated off: they are neither loaded as data of this sequence nor written. The Serving tab (top bar) draws such a tile with the part past the end hatched.",
    },
    { kind: 'h', text: 'What a page table costs' },
    {
      kind: 'p',
      text: "During decoding every step appends one token per sequence, and nobody knows in advance how long a sequence will get. A paged cache keeps $K$ and $V$ in a pool of fixed-size pages, $[\\text{num\\_pages}, \\text{page\\_size}, H_k, d]$; key $j$ of sequence $b$ lives in slot $j \\bmod \\text{page\\_size}$ of page block_table$[b, \\lfloor j / \\text{page\\_size} \\rfloor]$. Pages are handed out as sequences grow and returned when they finish, so memory is never reserved for tokens that do not exist. Table entries past a sequence's pages are never read, and neither are the slots past its last token.",
    },
    {
      kind: 'p',
      text: "The bytes of the indirection are small: one 4-byte table entry for each page a K/V tile load crosses (TensorRT-LLM's fmha_v2 keeps a $K$ and a $V$ index per page: 8 bytes), and the sequence's length once per thread block. One page of TensorRT-LLM's default 64 tokens (tokens_per_block in TensorRT-LLM's KV-cache configuration) with 8 K/V heads of $d = 128$ in 16 bits holds $64 \\cdot 8 \\cdot 128 \\cdot 2 \\cdot 2 = 262\\,144$ bytes of $K$ and $V$. What the table really costs is a dependent load before every tile and the rule that a tile must not cut a page in an arbitrary place: the tile width $B_c$ divides the page size (FA2's paged path requires it), or is a whole number of pages and then looks up one entry per page.",
    },
    {
      kind: 'p',
      text: "The Serving tab draws this indirection step by step: the block-table cell and the pool page a load reads light up, and under them the shared memory of the thread block shows each $K$/$V$ buffer with the physical page and slots it was copied from. fmha_v2 keeps two $K$/$V$ stages, so the next tile's pages arrive in one while the other is being used; flash-decoding's split kernel keeps one. The example of this chapter is a paged cache of three sequences with 70, 5 and 33 tokens, pages of 16 tokens, $H_q = 2$, $H_k = 1$, $d = 16$, one query each, decoded by flash-decoding in 3 splits:",
    },
    { kind: 'serving', label: 'Open the paged example in the Serving tab', form: PAGED_FORM },
    { kind: 'h', text: 'Flash-decoding splits on pages' },
    {
      kind: 'p',
      text: "Flash-decoding chooses one split count for the whole batch, from the longest sequence, and split $s$ of every sequence covers the same K/V blocks; a short sequence has fewer non-empty splits. Here the split length is rounded up to whole pages, so no page is walked by two splits and each split's thread block looks up only its own table entries. The debugger below is sequence 0 of the paged example after the table lookup: one query, 70 keys, tiles of 16 keys (one page each), 3 splits. It opens at the first load of split 1.",
    },
  ],
  panes: [
    {
      preset: lessonRequest(
        'flash-decoding',
        { nq: 1, nk: 70, d: 16, dtype: 'bf16' },
        { blockM: 64, blockN: 16 },
        { features: { splits: 3 } },
      ),
      target: {
        describe: 'the first K/V load of split 1',
        find: (ev) => firstIndex(ev, (e) => kvLoad(e) && e.split === 1),
        fallback: { describe: 'the first K/V load (one split)', find: (ev) => firstIndex(ev, kvLoad) },
      },
      views: ['heatmaps', 'counters'],
    },
  ],
  reference: ['flash-decoding'],
  tryThis: [
    {
      label: 'Tiles of 32 keys (two pages)',
      look: 'Each split now loads one 32-key tile, two pages, per step.',
      change: (r) => ({ ...r, blocks: { ...r.blocks, blockN: 32 } }),
    },
    {
      label: 'One split',
      look: 'A single thread block walks all five pages; no partial results, no combine.',
      change: (r) => ({ ...r, features: { ...r.features, splits: 1 } }),
    },
  ],
  questions: [
    {
      id: 'packing',
      prompt:
        "Four sequences of 40, 160, 8 and 120 tokens (queries = keys, no mask, one head, $d = 16$) run through FA2 packed, and padded to 160 each. What percentage of the padded batch's matmul FLOPs does the packed batch do?",
      kind: 'number',
      tolerance: 1e-3,
      answer: () => {
        const { packed, padded } = packingFlops();
        return (100 * packed) / padded;
      },
      explain: (_c, a) => {
        const { packed, padded } = packingFlops();
        return `${fmt(Number(a), 4)}%: ${fmt(packed, 6)} FLOPs packed against ${fmt(padded, 6)} padded. Work goes with Σ n², so the padding of the short sequences to 160 is what packing saves.`;
      },
      hint: 'Score entries go with n² per sequence: add the four n² and compare with 4 · 160².',
    },
    {
      id: 'table-bytes',
      prompt:
        "How many bytes of block table does the paged example (70, 5 and 33 tokens, pages of 16, $H_q = 2$) read? Work it out from the text first, then check it against the Serving tab's Counters (the button in the text opens the example there).",
      kind: 'integer',
      answer: () => pagedCounters().counters.hbmRead.block_table ?? 0,
      explain: () => {
        const { counters, touched } = pagedCounters();
        const kv = (counters.hbmRead.K ?? 0) + (counters.hbmRead.V ?? 0);
        return `${fmtBytes(counters.hbmRead.block_table ?? 0)}: 4 bytes for each of the ${touched} pages, once per query head, each page in one K/V tile — against ${fmtBytes(kv)} of K and V.`;
      },
      hint: "Count the pages of each sequence (ceil(length / 16)); every query head's thread blocks look each one up once.",
    },
    {
      id: 'split-pages',
      prompt: 'In the debugger, how many K/V tiles does split 1 load? (With one split there is no split 1: answer 0.)',
      kind: 'integer',
      answer: ({ run }) => run.events.filter((e) => kvLoad(e) && e.split !== undefined && splitOf(e) === 1).length,
      explain: ({ run }, a) => {
        const cols = run.events.filter((e) => kvLoad(e) && e.split === 1).map((e) => `${e.tile.cols[0]}…${e.tile.cols[1] - 1}`);
        return Number(a) === 0
          ? 'One split: every tile belongs to split 0.'
          : `${a}: keys ${cols.join(' and ')}; the split starts and ends on a page boundary.`;
      },
      hint: 'Step through the K/V loads of the debugger and count those whose step line says split 1.',
    },
  ],
  sources: [
    'Packed variable-length batches (cu_seqlens) and the paged K/V cache with its block table: Dao-AILab/flash-attention, hopper/flash_api.cpp@0251105a, mha_fwd, l. 673–688 (cu_seqlens_q at l. 680, page_table at l. 688) and l. 731–742 (paged and variable-length modes chosen from them).',
    'Paged attention: "Efficient Memory Management for Large Language Model Serving with PagedAttention", arXiv 2309.06180, §4.',
    "fmha_v2's paged K/V (a K and a V block table per sequence) and tokens per block: NVIDIA/TensorRT-LLM, cpp/kernels/fmha_v2/src/fmha/paged_kv_cache.h@000a01de, l. 22–46 (Kv_block_array; tokens per block l. 31, the K and V tables l. 35–39).",
  ],
};
