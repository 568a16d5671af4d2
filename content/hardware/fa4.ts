import { tex, type HardwareLesson } from './types.ts';

export const fa4Hardware: HardwareLesson = {
  algorithm: 'fa4',
  title: 'FlashAttention-4 on Blackwell: TMEM and warp roles',
  topics: [
    {
      id: 'tmem',
      title: 'Tensor memory',
      text: tex`Each SM has 256 KB of **tensor memory**: 128 lanes × 512 columns of 32 bits. \`tcgen05\` MMAs accumulate there, not in registers. FA4 places $S_0, S_1$ (128 columns each, FP32) and $O_0, O_1$ ($d_v$ columns each): for $d_v = 128$ that is exactly $2\cdot128 + 2\cdot128 = 512$ columns. Once softmax has read $S_s$, it writes $P_s$ as 16-bit values, two per column, over the **second half** of $S_s$ (columns 64–127 of it) — the TMEM grid shows $P$ on top of $S$.`,
    },
    {
      id: 'roles',
      title: 'Warp roles and register budgets',
      text: tex`16 warps: **load** (TMA), **MMA** (one thread issues every \`tcgen05.mma\`), **softmax 0** and **softmax 1** (one warpgroup per Q tile, one thread per row), **correction** (rescales $O$ in TMEM, then the epilogue), **epilogue** (TMA store) and an **empty** warp. The budgets follow flash_fwd_sm100.py@0251105a: below $d = 96$ 200 registers per thread for softmax, 64 for correction, 48 for every other warp; from $d = 96$ on 192 / 80 unless \`_TUNING_CONFIG\` names the configuration (2-CTA $d = 128$: 176 / 88; causal $d = 128$: 192 / 72), the other warps getting $512 - 2\cdot\text{softmax} - \text{correction}$ — the register bars. With at most 128 packed rows ($N_q$ times $H_q/H_k$ when grouped-query heads are packed, the default for $H_q > H_k$) there is one Q tile and warps 4–7 idle with the empty warp.`,
    },
    {
      id: 'lsl',
      title: 'Large–Small–Large K/V rotation',
      text: tex`For $d = 192$, $d_v = 128$ a $K$ tile (48 KB) is larger than a $V$ tile (32 KB). The three-stage ring is laid out **Large–Small–Large** in $2L + S$ bytes, stage stride $(L+S)/2$. $K$ and $V$ alternate through the stages, so on the next round the middle stage must hold a Large tile: it moves **left** by $(L-S)/2$, and the ring reads Small–Large–Small. In the memory map, step through the loads: the first $V$ lands in the middle slot shifted right (Small in the middle); on the next round $V$ lands in the left slot and the following $K$ in the middle slot shifted left (Large in the middle), over bytes the left slot's Large tile used before — which is why a $K$ landing in stage 0 must also wait for stage 1 to be released.`,
    },
    {
      id: 'p34',
      title: '3/4 of P',
      text: tex`The $PV$ MMA reads $P$ from TMEM. Softmax stores the first 3/4 of $P$ and signals; the MMA warp starts $O_s \mathrel{+}= P_s V$ on those columns while the last quarter is still being converted. On the timeline: two tensor ops per $PV$, the second waiting on \`P_full_2\`.`,
    },
    {
      id: 'lazy',
      title: 'Lazy rescaling',
      text: tex`The correction warpgroup votes per 32 rows: a rescale $O \leftarrow 2^{m - m'} O$ (a TMEM load, an FMA pass, a TMEM store) runs only when some row's max grew by more than $\tau = 8$ in log2 units. Otherwise the stale max stays; $P \le 2^\tau$ and the final $O/\ell$ is unchanged. Switch **lazy rescale** off: every block after the first gets the three correction ops.`,
    },
    {
      id: 'exp2',
      title: 'exp2 emulation',
      text: tex`MUFU gives 16 exponentials per clock per SM while the tensor cores compute a 128×128 tile in a few hundred cycles. FA4 evaluates a share of $2^x$ on the FMA pipes: $2^x = 2^{\lfloor x\rfloor}\cdot p(x - \lfloor x \rfloor)$ with a cubic $p$. Which elements: \`apply_exp2_convert\` (softmax.py) cuts a row into 32-element fragments and, from fragment \`ex2_emu_start_frg\` (1 by default) up to the last one (which stays on MUFU), emulates the last 4 of every \`ex2_emu_freq\` elements — 16 of 128 by default, 24 with the 2-CTA $d = 128$ setting (every 10, from fragment 1). The same pattern runs on masked blocks. With emulation on, the softmax lanes show a shorter MUFU bar plus an FMA bar "exp2 cubic polynomial".`,
    },
    {
      id: '2cta',
      title: '2-CTA mode (cta_group::2)',
      text: tex`For problems without a causal or local mask, split or varlen queries, with $d \in \{128, 192\}$, $d_v = 128$ and more than 256 packed rows ($N_q \cdot H_q/H_k$ when grouped-query heads are packed, which needs $128$ divisible by $H_q/H_k$; and always at $d = d_v = 256$), interface.py sets \`use_2cta_instrs\`: two CTAs on two SMs form a cluster pair. The leader's MMA warp issues \`tcgen05.mma\` with \`cta_group::2\` over $M = 256$ rows: each SM's tensor core computes its own CTA's 128 rows into its own TMEM ($S_s$, $P_s$, $O_s$ exactly as in one CTA), while the $K$ and $V$ operands are split between the two CTAs' shared memory — each CTA loads and holds half of every K/V tile. A K/V stage therefore costs half the bytes, and the ring is deeper: 6 stages at $d = 128$ instead of 3. The memory map shows each CTA's SMEM strip and TMEM grid with its halves of the K/V tiles, and the resource sheet's \`cta_group\`. The timeline draws both CTAs, leader/… above peer/…: the peer's MMA warp issues nothing, the leader's MMA ops (marked "(cta_group::2)") reach down into the peer's mma row, the peer's softmax waits for the leader's commit and the leader's next MMA for both CTAs. At $d = d_v = 256$ the dedicated kernel (sm100_hd256_2cta_fmha_forward.py) runs: one Q tile per CTA in two halves of $d$, two MMAs per $S$ and per $P \cdot V$, S0/S1/O over all 512 TMEM columns with $P$ over the first half of its $S$, a 4-stage K/V ring, correction rescaling $O$ after every block and storing it from registers.`,
    },
  ],
  steps: {
    skip: tex`An empty tile of the block mask for both $Q$ tiles of the CTA: the load warp issues no TMA copy and the MMA warp no \`tcgen05.mma\` for this block; nothing appears on the timeline or in the ring.`,
    load: tex`A TMA copy from the load warp into $sQ_s$ or the K/V ring; the cursor is its completion. Watch the offsets for $d = 192$: the middle stage moves between rounds (Large–Small–Large).`,
    qk: tex`\`tcgen05.mma\` $S_s = Q_s K_j^\top$ into TMEM columns of $S_s$; the TMEM grid shows $S_s$ filled with this block.`,
    mask: tex`The softmax warpgroup loads $S_s$ from TMEM into registers (\`tcgen05.ld\`) and masks there.`,
    rowmax: tex`Row max in registers, written to \`sScale\` for the correction warpgroup (which now votes whether to rescale).`,
    exp: tex`$P = 2^{u - m}$ on MUFU (and the polynomial on FMA), then \`tcgen05.st\` of 3/4 and the last 1/4 of $P$ over half of $S_s$ in TMEM.`,
    rowsum: tex`Row sum and conversion in registers after $P$ is stored; it waits for the correction warpgroup to have read the scale.`,
    rescale: tex`The correction warpgroup: read the scale, vote; without lazy rescaling a TMEM round trip of $O_s$ with an FMA pass.`,
    pv: tex`\`tcgen05.mma\` $O_s \mathrel{+}= P_s V_j$ with $P_s$ read from TMEM (3/4 first, then the rest); when the second Q tile's $PV$ completes, $V_j$'s ring slot is released.`,
    normalize: tex`The correction warpgroup loads $O_s$ from TMEM, divides by $\ell$ and converts.`,
    write: tex`$O_s$ is written to shared memory over $sQ_s$ (Q is dead by then) and stored by the epilogue warp's TMA.`,
    combine: tex`FA4 splits K/V when num_splits > 1 is asked for (the default is 1; 0 picks it by heuristic, interface.py@0251105a l. 367-383): partials in fp32, merged by a combine kernel, which FlashScope does not draw.`,
  },
};
