// Chapter 7: FA3 on Hopper — producer/consumer, TMA, ping-pong, intra-warpgroup overlap.
import type { Chapter } from './types.ts';
import { firstIndex, fmt, lessonRequest } from './queries.ts';
import { fa3DefaultTile, type AttentionProblem, type TraceEvent } from '../../../engine/api.ts';

/** The mask steps of one Q tile, in trace order. */
const maskStepsOf = (ev: readonly TraceEvent[], qBlock: number) => ev.filter((e) => e.kind === 'mask' && e.tile.qBlock === qBlock);

/** A P·V step issued right after the next block's S = QKᵀ: the intra-warpgroup overlap. */
const overlapped = (ev: readonly TraceEvent[]) =>
  firstIndex(ev, (e, i) => e.kind === 'pv' && i > 0 && ev[i - 1].kind === 'qk' && ev[i - 1].tile.kvBlock !== e.tile.kvBlock);

const H100 = 'h100';

/** The lesson's problem in the tile the shipped kernel picks for it, so the trace and the timeline share one tile. */
const kernelTile = (shape: Pick<AttentionProblem, 'nq' | 'nk' | 'd'> & Partial<AttentionProblem>) => {
  const req = lessonRequest('fa3', shape, {});
  return { ...req, blocks: fa3DefaultTile(req.problem) };
};

export const chapter7: Chapter = {
  number: 7,
  slug: 'fa3',
  title: 'FA3: producer, consumers, ping-pong, overlap',
  summary: "Hopper's TMA and wgmma let softmax hide under matmuls; toggle each trick live.",
  blocks: [
    {
      kind: 'p',
      text: "On Hopper (H100) the tensor cores are so fast that FA2's softmax becomes the bottleneck: the exponentials run on the special-function units at a small fraction of matmul throughput. FA3 keeps FA2's numbers and reorganizes who does what, and when.",
    },
    {
      kind: 'p',
      text: '**Producer and consumers.** One producer warp does nothing but issue TMA copies (the Tensor Memory Accelerator moves a whole tile with one instruction) into two-stage rings of $K$ and $V$ buffers. Consumer warpgroups of 128 threads each own 64 rows of the $Q$ tile — two for a 128-row tile, three for a 192-row one — and run the matmuls (wgmma, asynchronous) and the softmax; setmaxnreg moves registers from the producer to them (24 / 240, or 32 / 160 with three). Buffers are handed over with barriers, so loading never waits on computing except when the ring is full.',
    },
    {
      kind: 'p',
      text: '**Ping-pong.** With two consumer warpgroups, a barrier makes them take turns: while warpgroup 0 does its softmax, warpgroup 1 owns the tensor cores for its GEMMs, and the other way round (three take turns round-robin); the warp-role timeline under the debugger draws the turns. The debugger below runs $d = 16$ in fp16, where the kernel picks a 192×192 tile (192×128 when causal): three consumer warpgroups share each $Q$ tile and take turns round-robin, and each step of the trace carries its warpgroup and covers its 64 rows, as the three consumer lanes of the timeline do. The shipped kernel keeps this scheduler barrier only for 16-bit inputs up to $d = 128$ and FP8 from $d = 128$. Without it each warpgroup runs its own mainloop, held to the others only by the barriers of the K/V ring; they start together and do the same work, so the debugger lists each phase for every warpgroup before the next — load $d = 256$ in fp16, FP8 at $d = 64$, or switch ping-pong off below to see it.',
    },
    {
      kind: 'code-wins',
      text: 'The paper describes one 128-row tile served by two consumer warpgroups, whatever the head dimension, and ping-pong between them with no condition on it. The shipped kernel chooses its tile per head dimension: 192×192 at $d \\le 64$ with three consumer warpgroups and $P$ going through shared memory (192×128 with $P$ in registers when causal), 192×144 at $d \\le 96$, 128×176 at $d \\le 128$ (128×128 causal), 128×128 or 128×112 at $d \\le 192$, 128×80 above; FP8 uses 128×224 at $d = 128$. It stages $O$ over the $V$ buffers rather than over $Q$, rescales $O$ after the $P\\cdot V$ wait (before the GEMM at $d > 128$), and compiles ping-pong in only for the head dimensions above. The debugger and the hardware model on this page follow the code.',
    },
    {
      kind: 'p',
      text: '**Intra-warpgroup overlap.** Inside one warpgroup, FA3 issues $S_{j} = QK_{j}^{\\top}$ for the next block it visits (the index $j$ counts down, see below) before $O \\mathrel{+}= P_{j+1}V_{j+1}$ for the previous one, and computes the next softmax while that second GEMM is in flight:',
    },
    {
      kind: 'math',
      tex: '\\underbrace{S_{j} = QK_j^{\\top}}_{\\text{issue}} \\;\\to\\qquad \\underbrace{O \\mathrel{+}= P_{j+1}V_{j+1}}_{\\text{issue}} \\;\\to\\qquad \\underbrace{\\mathrm{softmax}(S_{j})}_{\\text{while the GEMM runs}} \\;\\to\\qquad O \\leftarrow O\\cdot e^{m^{\\text{old}} - m^{\\text{new}}}',
    },
    {
      kind: 'p',
      text: 'FA3 also visits the K/V blocks from last to first, so on a causal problem the blocks that cross the diagonal, the only ones that need a mask, come first. Both reorderings compute the same numbers; only the order of the trace changes. Toggle them below: the debugger reloads with the switch, and the table re-runs the hardware model on an H100-sized problem.',
    },
  ],
  panes: [
    {
      preset: kernelTile({ nq: 384, nk: 384, d: 16, dtype: 'fp16' }),
      target: {
        describe: "the first P·V issued right after the next block's S = QKᵀ",
        find: overlapped,
        fallback: {
          describe: "the first P·V (with the overlap off it follows its own block's softmax)",
          find: (ev) => firstIndex(ev, (e) => e.kind === 'pv'),
        },
      },
      views: ['heatmaps', 'stats', 'counters', 'hw-timeline'],
    },
  ],
  toggles: [
    {
      feature: 'intraOverlap',
      label: 'Intra-warpgroup overlap',
      on: true,
      off: false,
      kernelDefault: true,
      explain: 'Off: qk, softmax, pv for one block, then the next.',
    },
    {
      feature: 'pingpong',
      label: 'Ping-pong between warpgroups',
      on: true,
      off: false,
      kernelDefault: true,
      explain:
        'Off: the warpgroups run side by side, as the kernel does where it has no scheduler barrier; the trace lists each phase for both before the next.',
    },
  ],
  hardware: {
    caption: 'Simulated H100 kernel time, hardware model (engine/hw)',
    shapeNote: 'batch 4, 16 heads, N = 4096, d = 128, bf16',
    shape: { batch: 4, hq: 16, hk: 16, nq: 4096, nk: 4096, d: 128, dv: 128, dtype: 'bf16', causal: false },
    rows: [
      { algorithm: 'fa3', gpu: H100, features: {}, label: 'FA3, all on' },
      { algorithm: 'fa3', gpu: H100, features: { pingpong: false }, label: 'ping-pong off' },
      { algorithm: 'fa3', gpu: H100, features: { intraOverlap: false }, label: 'intra-warpgroup overlap off' },
      { algorithm: 'fa3', gpu: H100, features: { pingpong: false, intraOverlap: false }, label: 'both off' },
    ],
  },
  reference: ['fa3'],
  tryThis: [
    {
      label: 'Causal',
      look: 'The kernel takes K/V blocks of 128 when causal; each Q tile starts with the blocks its diagonal crosses, the only ones with a mask.',
      change: (r) => {
        const problem = { ...r.problem, causal: true };
        return { ...r, problem, blocks: fa3DefaultTile(problem) };
      },
    },
    {
      label: 'bf16 inputs',
      look: 'FA3 takes 16-bit inputs on real hardware; P is rounded before the second GEMM.',
      change: (r) => ({ ...r, problem: { ...r.problem, dtype: 'bf16' } }),
    },
  ],
  questions: [
    {
      id: 'mask-steps',
      prompt: 'Load **Causal** (Try this). How many mask steps does $Q$ tile 1 (rows 192–383) have in the trace, counting every warpgroup?',
      kind: 'integer',
      answer: ({ run }) => maskStepsOf(run.events, 1).length,
      explain: ({ run }, a) => {
        const steps = maskStepsOf(run.events, 1);
        if (steps.length === 0)
          return 'None: the loaded problem is not causal, so no score is masked. Load Causal and step through Q tile 1.';
        const blocks = [...new Set(steps.map((e) => e.tile.kvBlock))];
        const per = blocks.map((k) => `block ${k}: ${steps.filter((e) => e.tile.kvBlock === k).length}`).join(', ');
        return `${a} (${per}). A warpgroup masks a block wherever its 64 rows hide some of the block's keys, even a block whose keys it sees none of, since the whole tile visits the same blocks. The tile's diagonal crosses the last blocks it needs; FA3 visits those first, walking the blocks from last to first, and the rest of its loop runs without a mask.`;
      },
      hint: 'Step through Q tile 1 and count the steps whose line reads "Mask the hidden scores"; the S heatmap greys out what each one hides.',
    },
    {
      id: 'turn-after-softmax',
      prompt:
        'Warpgroup 0 finishes the softmax (its row sum) of the first K/V block it visits. Which warpgroup does the next consumer step in the loaded trace belong to: 0, 1 or 2?',
      kind: 'integer',
      answer: ({ run }) => {
        const ev = run.events;
        const i = firstIndex(ev, (e) => e.kind === 'rowsum' && e.warpgroup === 0);
        const next = ev.slice(i + 1).find((e) => e.warpgroup !== undefined);
        return next?.warpgroup ?? -1;
      },
      explain: ({ run }, a) =>
        run.request.features?.pingpong === false
          ? `Warpgroup ${a}: with ping-pong off the warpgroups do their softmax at the same time and take the tensor cores together, so the trace lists warpgroup 1's softmax next. The kernel runs this way wherever it has no scheduler barrier (16-bit d > 128, FP8 d < 128).`
          : `Warpgroup ${a}: its turn at the tensor cores follows its softmax, so it issues S = QKᵀ for its next block and then the P·V of the block just done, while warpgroup 1 computes its softmax; the scheduler barrier passes the turn round-robin.`,
      hint: 'Step to the first row sum of the first warpgroup (the step line names the warpgroup), step once more and read whose step it is.',
    },
    {
      id: 'overlap-vs-pingpong',
      prompt:
        "Both tricks hide softmax time on the H100 in the hardware table. A trick's cost is what the kernel loses when only that trick is off. How many times the cost of ping-pong off is the cost of intra-warpgroup overlap off?",
      kind: 'number',
      // The table shows times to 0.1 µs.
      tolerance: 0.02,
      answer: ({ simulate }) => {
        const on = simulate('fa3', H100, {}).timeUs;
        return (simulate('fa3', H100, { intraOverlap: false }).timeUs - on) / (simulate('fa3', H100, { pingpong: false }).timeUs - on);
      },
      explain: ({ simulate }, a) => {
        const on = simulate('fa3', H100, {});
        const pp = simulate('fa3', H100, { pingpong: false });
        const ov = simulate('fa3', H100, { intraOverlap: false });
        const both = simulate('fa3', H100, { pingpong: false, intraOverlap: false });
        const cost = (r: { timeUs: number }) => r.timeUs - on.timeUs;
        const gap = cost(both) - cost(pp) - cost(ov);
        const sum =
          Math.abs(gap) < 0.05
            ? `With both off the kernel loses ${fmt(cost(both), 4)} µs, the two costs added: in this model they hide different parts of the softmax.`
            : `With both off the kernel loses ${fmt(cost(both), 4)} µs, ${gap < 0 ? 'less' : 'more'} than the two costs added (${fmt(cost(pp) + cost(ov), 4)} µs).`;
        const pct = (r: { utilization: Record<string, number> }) => `${Math.round((r.utilization.tensor ?? 0) * 100)}%`;
        return `${fmt(Number(a), 3)}×: ${fmt(cost(ov), 4)} µs against ${fmt(cost(pp), 4)} µs. The matmuls are the same in every row, so a cost is softmax time the tensor cores now wait through: busy ${pct(ov)} with the overlap off, ${pct(pp)} with ping-pong off, ${pct(on)} with both on. ${sum}`;
      },
      hint: "Each cost is that row's time minus the \"FA3, all on\" time. Divide the overlap's cost by ping-pong's.",
    },
  ],
  sources: [
    '"FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision", arXiv 2407.08608: §3.1 (producer and consumers, ping-pong), §3.2 (intra-warpgroup overlap).',
    'Tile sizes per head dimension: Dao-AILab/flash-attention, hopper/tile_size.h@0251105a, l. 10–40 (tile_size_fwd_sm90, 16-bit inputs).',
    "Where ping-pong is compiled in (UseSchedulerBarrier): hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a, l. 352–355; the K/V ring pipelines, the producer warpgroup and the consumers' mainloop: hopper/flash_fwd_kernel_sm90.h@0251105a, l. 241–245, l. 308–359 and l. 360–421.",
  ],
};
