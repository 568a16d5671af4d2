import { tex, type HardwareLesson } from './types.ts';

export const fa3Hardware: HardwareLesson = {
  algorithm: 'fa3',
  title: 'FlashAttention-3 on Hopper: who does what',
  topics: [
    {
      id: 'roles',
      title: 'Producer and consumers',
      text: tex`A CTA owns 128 query rows and three warpgroups. The **producer** (one warp of it does the work) only issues TMA copies: $Q$ once, then $K_j$ and $V_j$ into a ring of \`stages\` slots, waiting on each slot's *empty* barrier and letting the copy arrive on its *full* barrier. Two **consumer** warpgroups of 64 rows each run both GEMMs with \`wgmma\` and the softmax in registers.

With \`setmaxnreg\` the producer gives its registers back (24 per thread) so each consumer can hold 240: $S$ and $O$ of 64 rows live entirely in registers. The register bars show that budget against the 64 K-entry register file.`,
    },
    {
      id: 'tma',
      title: 'TMA and the ring buffer',
      text: tex`TMA copies a whole tile with one instruction and signals an mbarrier with the byte count, so no thread spends instructions on addresses. In the memory map, watch the \`sK\`/\`sV\` slots cycle: a slot is filled as soon as both consumers released its previous tile, so with two stages the copy of $K_{j+1}$ overlaps the GEMMs on $K_j$.`,
    },
    {
      id: 'pingpong',
      title: 'Ping-pong scheduling',
      text: tex`The softmax needs the MUFU and FMA pipes, not the tensor cores. With **ping-pong**, named barriers hand the tensor cores from one consumer to the other: warpgroup 1 runs its GEMMs while warpgroup 2 does its softmax, then they swap. Switch it off on the timeline and the two consumer lanes start their GEMMs together, then both sit in softmax while the tensor core idles — the tensor-core utilization of the window drops. The shipped kernel has the barrier only for 16-bit inputs at $d \le 128$ and FP8 at $d \ge 128$ (UseSchedulerBarrier, hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp@0251105a); elsewhere the consumers run as with the switch off, in the timeline and in the debugger's step order.`,
    },
    {
      id: 'overlap',
      title: 'Intra-warpgroup overlap',
      text: tex`Within one warpgroup, the GEMM of the next block is issued before the second GEMM of this one:
$$S_{j+1} = Q K_{j+1}^\top \text{ issued},\quad O \mathrel{+}= P_j V_j \text{ issued},\quad \text{softmax}(S_{j+1}) \text{ while } P_jV_j \text{ runs}.$$
It costs registers ($S_{j+1}$ and $P_j$ live at once) and hides the softmax under the wgmma of $PV$.`,
    },
    {
      id: 'fp8',
      title: 'Background: FP8 and block quantization',
      text: tex`FA3's FP8 path doubles tensor throughput again. To keep error small it quantizes **per block**: each tile of $Q$, $K$, $V$ carries its own scale, $X \approx s_X \cdot \hat X$ with $\hat X$ in FP8, so one outlier only costs precision in its own block, and the scales fold into the softmax scale: $S = s_Q s_K \, \hat Q \hat K^\top$. *Incoherent processing* multiplies $Q$ and $K$ by the same random orthogonal (Hadamard) matrix $M$ first — $QM (KM)^\top = QK^\top$ — spreading outliers over all coordinates. FlashScope models FA3's e4m3 forward with the kernel's per-(batch, KV head) descales; the block quantization and the rotation are the paper's experiment, off by default.`,
    },
  ],
  steps: {
    skip: tex`An empty tile of the block mask: no row of the CTA's $Q$ tile may see a key of this block, so the producer issues no TMA copy and no \`wgmma\` runs; the timeline has nothing for it.`,
    load: tex`The producer's TMA copy; the tile appears in its ring slot in the memory map (faded while in flight) and the cursor sits at the copy's completion.`,
    qk: tex`\`wgmma\` $S = QK_j^\top$ of one consumer's 64 rows, both operands from shared memory; the result lands in that warpgroup's registers.`,
    mask: tex`Masking is done on the accumulator registers inside the softmax; the timeline shows it as part of the consumer's first softmax op.`,
    rowmax: tex`Row max of the 64×$B_c$ tile in registers (FMA pipe); with ping-pong (16-bit $d \le 128$, FP8 $d \ge 128$) the other consumer's GEMMs run now; without it the other consumer is in its softmax too.`,
    exp: tex`$2^{(s - m)\log_2 e}$ on MUFU, 16 per clock per SM — the op the ping-pong hides.`,
    rowsum: tex`Row sums and the conversion of $P$ to 16 bits, in registers; $P$ stays in registers as the A operand of the next wgmma.`,
    rescale: tex`$O \leftarrow e^{m_{\text{old}} - m_{\text{new}}} O$ on the register-resident accumulator, folded into the row-max op on the timeline.`,
    pv: tex`\`wgmma\` $O \mathrel{+}= P V_j$ with $P$ from registers and $V_j$ from shared memory; when it completes, the consumer arrives on $V_j$'s empty barrier and the producer may refill the slot.`,
    normalize: tex`$O / \ell$ in registers after the last block; both consumers then meet at the epilogue barrier.`,
    write: tex`$O$ goes to shared memory in $sO$, which shares its bytes with the $V$ ring $sV$ (the epilogue's storage is a union with the mainloop's, flash_fwd_kernel_sm90.h@0251105a l. 90-103), and out with a TMA store.`,
    combine: tex`FA3 splits K/V when num_splits > 1 (upstream's heuristic picks it for decoding-sized grids, flash_api.cpp@0251105a l. 442-471): each split writes an fp32 partial and a separate combine kernel merges them. FlashScope's FA3 timeline runs each split's K/V range but does not draw the combine.`,
  },
};
