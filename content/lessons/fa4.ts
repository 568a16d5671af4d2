import { md, type AlgorithmLesson } from './types.ts';

const r = md;

export const fa4Lesson: AlgorithmLesson = {
  id: 'fa4',
  title: 'FlashAttention-4',
  hardware: 'Blackwell (SM100): tcgen05 MMA into tensor memory (TMEM), TMA, 228 KB shared memory',
  sources:
    '"FlashAttention-4: Algorithm and Kernel Pipelining Co-Design for Asymmetric Hardware Scaling" (arXiv 2603.05451); flash_attn/cute/flash_fwd_sm100.py, interface.py and softmax.py at Dao-AILab/flash-attention 0251105a.',
  intro: r`On Blackwell the tensor cores got roughly twice as fast again, while the exponential unit (MUFU) and
shared-memory bandwidth did not. FlashAttention-4 is built around that imbalance: the GEMMs are cheap,
so everything else — the exponentials, the rescaling of $O$, the data movement — must be hidden or
removed.

**Roles.** One CTA owns *two* Q tiles of 128 rows (\`q_stage = 2\`). A load warp issues TMA copies:
$Q_0$, $K_{\text{last}}$, $Q_1$, $V_{\text{last}}$, then $K_j, V_j$ going down. One MMA warp issues
\`tcgen05\` GEMMs whose accumulators live in **tensor memory**: $S_0, S_1$ ($128\times128$ FP32 each) and
$O_0, O_1$ ($128\times d_v$) exactly fill the 512 TMEM columns for $d_v = 128$; $P$ is written over the
half of $S$ it came from. Two softmax warpgroups (one per Q tile, one thread per row) turn $S$ into $P$.
A correction warpgroup rescales $O$ in TMEM and runs the epilogue.

**Shared memory.** Two Q tiles of $128\times192$ plus a three-stage K/V ring: for the DeepSeek shape
($d = 192$, $d_v = 128$) $K$ stages are larger than $V$ stages, so the ring is laid out
Large–Small–Large and the middle stage slides left or right by the size difference on alternate rounds
(Small–Large–Small): 224.5 KB of the 228 KB.

**The MMA loop.** After $S_0, S_1$ of the first block, each iteration issues
$O_0 \mathrel{+}= P_0V_{\text{prev}}$, $S_0 = Q_0K_j^\top$, $O_1 \mathrel{+}= P_1V_{\text{prev}}$, $S_1 = Q_1K_j^\top$.
The $PV$ GEMM may start once 3/4 of $P$ is in TMEM; the softmax signals the last quarter separately.

**Log2 domain.** The kernel folds $\text{scale}\cdot\log_2 e$ into one FMA and uses \`exp2\`:
$$P = 2^{\,u - m},\qquad u = s\cdot\log_2 e,\qquad m = \max u .$$
FlashScope's FA4 events show $u$ and $m$ in these units (marked *base 2*); the LSE is converted back to
natural log at the end.

**Lazy rescaling.** When the row max grows from $m$ to $m'$, FA2 multiplies $O$ and $\ell$ by
$2^{m-m'}$ every time. FA4 only does it when $m' - m > \tau$ ($\tau = 8$ for 16-bit types); otherwise it
keeps the stale $m$. Then $P = 2^{u-m}$ can exceed 1 — up to $2^{\tau} = 256$, harmless in FP16/BF16 —
but $\ell$ is summed against the same stale $m$, so
$$\frac{\sum_j 2^{u_j-m}v_j}{\sum_j 2^{u_j-m}} = \frac{\sum_j 2^{u_j-m^\star}v_j}{\sum_j 2^{u_j-m^\star}}$$
for any common $m$: the final division still gives the exact answer. The correction warp votes per warp of
32 rows and skips warps whose rows all kept their max; *rescale count* counts the rows it touched.

**Software exp2.** MUFU computes 16 exponentials per clock per SM — too few to keep up. FA4 evaluates
part of them on the FMA pipe: with $x = n + f$, $n = \lfloor x\rfloor$, $f\in[0,1)$,
$$2^x = 2^n\cdot 2^f,\qquad 2^f \approx c_0 + f\,(c_1 + f\,(c_2 + f\,c_3)),$$
the cubic evaluated with three FMAs. $n$ comes from adding $1.5\cdot2^{23}$ with round-down (the integer
lands in the low mantissa bits), and $2^n$ is applied by shifting those bits into the exponent field and
adding them to the bits of $2^f$ — an integer add instead of a multiply. Its relative error is about
$8.8\cdot10^{-5}$ (FlashScope measures it against \`Math.pow\`), far below BF16's $2^{-9}$. In each
32-column fragment the last 4 of every 16 columns are emulated (all fragments but a row's last), and only
on blocks needing no mask with $d \le 128$: 24 of 128 columns of an interior block.`,
  steps: {
    skip: r`An empty tile under the block mask: no row of either $Q$ tile of the CTA may see a key of this block, so the load warp issues no TMA copy and the MMA warp no \`tcgen05.mma\` for it. Only partial blocks run the mask.`,
    load: r`TMA copies from the load warp. Q tiles have their own two stages; K and V share a three-stage ring,
so at most three K/V blocks are in flight. A K stage is released after both $S$ GEMMs read it, a V stage
after both $PV$ GEMMs.`,
    qk: r`One \`tcgen05\` GEMM per Q tile, accumulator in TMEM. Values shown in log2 units: $u = s\cdot\log_2 e$
(scale, softcap and ALiBi included).`,
    mask: r`Applied by the softmax warpgroup on its registers after loading $S$ from TMEM; blocks that need it
also skip the software exp2.`,
    rowmax: r`$m' = \max(m, \max_j u_j)$. With lazy rescaling the new max is only adopted when $m'-m>\tau$;
otherwise the row keeps its stale max and its factor is 1.`,
    rescale: r`The correction warpgroup multiplies rows of $O_s$ in TMEM by $2^{m-m'}$. It runs concurrently with
the softmax, and must finish before the next $PV$ GEMM accumulates into $O_s$. Warps whose 32 rows all
have factor 1 skip the TMEM round trip.`,
    exp: r`$P = 2^{u-m}$: most elements on MUFU (\`ex2.approx\`), some with the polynomial on the FMA pipe.
$P$ is converted to the 16-bit input type and stored over $S$ in TMEM.`,
    rowsum: r`The row sum is taken from the FP32 exponentials (before the 16-bit conversion) and folded into
$\ell$ with the same factor as $O$.`,
    pv: r`$O_s \mathrel{+}= P_sV$ with $P$ read from TMEM (a TS GEMM). For the first block the accumulator is
zero-initialized instead of added to.`,
    normalize: r`The correction warpgroup divides by $\ell$ once; a learnable sink adds $2^{s\log_2 e - m}$ to
$\ell$ first. LSE $=(m+\log_2\ell)\ln 2$.`,
    write: r`$O_s$ leaves through shared memory with TMA (or vectorized stores), LSE in FP32.`,
  },
  features: [
    { key: 'lazyRescale', default: 'true', text: 'Keep a stale row max unless it grew by more than rescaleThreshold.' },
    { key: 'rescaleThreshold', default: '8', text: r`$\tau$ in log2 units; P is bounded by $2^\tau$.` },
    { key: 'exp2Emulation', default: 'true', text: 'Compute part of the exponentials with the cubic polynomial on the FMA pipe.' },
    {
      key: 'exp2EmuFreq',
      default: '0',
      text: "Period (columns) of the emulation pattern inside a 32-column fragment; 0 takes the kernel's value for the configuration (16, or _TUNING_CONFIG's: 10 for 2-CTA d = 128, 32 for causal d = 192).",
    },
    { key: 'exp2EmuRes', default: '0', text: "Emulated columns at the end of each period; 0 takes the kernel's 4 (6 at d = 256)." },
    {
      key: 'exp2EmuStartFrg',
      default: '-1',
      text: "First 32-column fragment that uses the polynomial; -1 takes the kernel's ex2_emu_start_frg (1, or 0 where _TUNING_CONFIG says so).",
    },
  ],
  support: [
    { variant: 'causal, sliding window', kernel: 'yes', flashscope: 'runs', note: 'n_block range per CTA; masked blocks use MUFU only' },
    { variant: 'ALiBi, softcap', kernel: 'yes', flashscope: 'runs', note: 'through score_mod' },
    { variant: 'learnable sinks', kernel: 'yes', flashscope: 'runs', note: '' },
    { variant: 'GQA / MQA, Nq ≠ Nk', kernel: 'yes', flashscope: 'runs', note: '' },
    { variant: 'd = 192, dv = 128 (DeepSeek)', kernel: 'yes', flashscope: 'runs', note: 'no software exp2 (d > 128)' },
    { variant: 'fp32 inputs', kernel: 'no', flashscope: 'runs', note: 'not a tcgen05 kind::f16 type; P kept fp32 to show the schedule' },
    { variant: 'd > 256', kernel: 'no', flashscope: 'rejected', note: 'no kernel instance' },
  ],
  content: {
    algorithm: 'fa4',
    title: 'FlashAttention-4 forward (Blackwell)',
    source: 'flash_attn/cute/flash_fwd_sm100.py at 0251105a',
    lines: [
      { id: '', text: 'CTA = two Q tiles (stages s = 0, 1); load warp, MMA warp, 2 softmax WGs, correction WG', indent: 0 },
      { id: 'fa4.loadQ', text: 'load warp: TMA Q_s (K_last, Q0, Q1, V_last, then K/V descending)', indent: 1, kinds: ['load'] },
      {
        id: 'fa4.loadK',
        text: 'load warp: wait for a free K/V stage (min((224 KiB − sQ − sO) / stage, 32) stages; 3 at d = 128); TMA K_j',
        indent: 2,
      },
      { id: 'fa4.skip', text: 'load warp: skip K/V block j when it is empty for both Q tiles of the CTA', indent: 2, kinds: ['skip'] },
      { id: 'fa4.loadV', text: 'load warp: wait for a free K/V stage; TMA V_j', indent: 2 },
      { id: '', text: 'for each block j (last … first), for s = 0, 1:', indent: 1 },
      { id: 'fa4.pv', text: 'MMA: O_s ← O_s + P_s V_prev   (P from TMEM; may start at 3/4 of P)', indent: 2, kinds: ['pv'] },
      { id: 'fa4.qk', text: 'MMA: S_s = Q_s K_jᵀ into TMEM;  u = S · scale · log₂e', indent: 2, kinds: ['qk'] },
      { id: 'fa4.mask', text: 'softmax WG s: u ← −∞ where masked', indent: 2, kinds: ['mask'] },
      { id: 'fa4.rowmax', text: "softmax WG s: m' = max(m, rowmax u); keep m if m' − m ≤ τ (lazy)", indent: 2, kinds: ['rowmax'] },
      { id: 'fa4.rescale', text: "correction WG: O_s ← 2^(m − m') · O_s   (warps with a moved max only)", indent: 2, kinds: ['rescale'] },
      {
        id: 'fa4.exp',
        text: 'softmax WG s: P_s = 2^(u − m)  (MUFU or cubic polynomial) → input dtype into TMEM (FP8: P·2⁸)',
        indent: 2,
        kinds: ['exp'],
      },
      { id: 'fa4.rowsum', text: "softmax WG s: ℓ = 2^(m − m') · ℓ + rowsum(2^(u − m))", indent: 2, kinds: ['rowsum'] },
      { id: 'fa4.normalize', text: 'correction WG: O_s = O_s / ℓ;  LSE = (m + log₂ ℓ) · ln 2', indent: 1, kinds: ['normalize'] },
      { id: 'fa4.write', text: 'write O_s and LSE to HBM', indent: 1, kinds: ['write'] },
    ],
    explain: {
      'fa4.skip':
        "The block mask marks each K/V block empty, partial or full for each of the CTA's two Q tiles. A block empty for both is never loaded and never reaches the MMA warp; a block empty for one tile only is still loaded for the other. Full blocks run no mask.",
      'fa4.loadQ':
        "Each of the CTA's Q tiles (two, or one when Nq ≤ 128) gets its own shared-memory stage; Q stays resident for the whole K/V loop. The load warp issues K of the first block before Q0.",
      'fa4.loadK':
        'K and V share one ring, as deep as the shared memory left after Q and O allows (3 stages at d = 128, 10 at d = 64; in 2-CTA mode each CTA holds half of every tile, so twice as many). For d = 192, dv = 128 on one CTA the K stages are larger, so the three-stage ring alternates Large-Small-Large and Small-Large-Small.',
      'fa4.loadV': "V_j follows K_j into the next free stage; it is released after both Q tiles' P·V GEMMs have read it.",
      'fa4.pv':
        "The previous block's P (16-bit, in tensor memory) times V, accumulated into O in tensor memory. The first P·V initializes O instead of adding.",
      'fa4.qk':
        'One tcgen05 GEMM per Q tile. Values are shown in log2 units u = s·log₂e, because the kernel folds scale·log₂e into a single FMA and uses exp2.',
      'fa4.mask': 'Masked blocks are handled by the softmax warpgroup in registers; they also always use the hardware exp2.',
      'fa4.rowmax':
        'The new row max. With lazy rescaling a row keeps its stale max unless the max grew by more than τ = 8 (log2 units); P may then reach 2^8, which fp16/bf16 hold easily. FP8 inputs use τ = 0: P is scaled by 2^8 before its FP8 cast and must stay within e4m3’s 448.',
      'fa4.rescale':
        'The correction warpgroup rescales O in tensor memory, concurrently with the softmax. Each warp votes over its 32 rows and skips the work if none moved.',
      'fa4.exp':
        'P = 2^(u − m). A quarter of the columns of most 32-column fragments use a cubic polynomial on the FMA pipe instead of the MUFU unit (relative error ≈ 9e-5).',
      'fa4.rowsum':
        'The row sum of the fp32 exponentials joins ℓ with the same factor as O, so numerator and denominator stay consistent even with a stale max.',
      'fa4.normalize': 'One division by ℓ; a learnable sink adds 2^(sink·log₂e − m) to ℓ first. The LSE is converted back to natural log.',
      'fa4.write': 'O goes out through shared memory (TMA store), in bf16 for FP8 inputs; the LSE in fp32.',
    },
    corrections: null,
  },
};
