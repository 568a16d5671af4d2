import { tex, type HardwareLesson } from './types.ts';

export const fmhaV2Hardware: HardwareLesson = {
  algorithm: 'fmha-v2',
  title: 'fmha_v2 on Ada (SM89): one kernel, no warp specialization',
  topics: [
    {
      id: 'warps',
      title: 'Four warps, each doing everything',
      text: tex`Ada has no TMA, no \`wgmma\`, no warp-specialized pipelines. TensorRT-LLM's fmha_v2 \`nl_tiled\` kernel splits the 128 query rows over 4 warps ($w_m = 4$, $w_n = 1$); every warp issues its share of the copies, its own \`mma.sync\` GEMMs and the softmax of its 32 rows. The timeline has one lane per warp; copy, tensor and softmax work alternate *within* a lane, and the only overlap is copies in flight under compute and warps on different sub-partitions.`,
    },
    {
      id: 'ldgsts',
      title: 'LDGSTS',
      text: tex`\`LDGSTS\` (\`cp.async\` in PTX) copies global memory to shared memory without passing through registers; a commit group and \`cp.async.wait_group\` + \`__syncthreads\` make the data visible. Row predicates mask the rows past the sequence end. K/V are double-buffered: while block $j$ is computed, block $j+1$ is in flight into the other buffer (the two \`sK\`/\`sV\` slots of the memory map alternate).`,
    },
    {
      id: 'qkv',
      title: 'Packed QKV and the grid',
      text: tex`The modelled build runs with \`qkv_layout=packed_qkv\`: one tensor $[B, S, 3, H, D]$, so a token's $q$, $k$, $v$ for all heads are adjacent and one pointer plus strides addresses all three. The grid is \`(Q tiles, H, B)\`: \`blockIdx.x\` the 128-row Q tile, \`blockIdx.y\` the head, \`blockIdx.z\` the batch. A recorded fmha_exe run of that build ($B=4$, $H=16$, $S=1024$, $d=16$, FP16 on an RTX 4060) took 411.6 µs, 10.43 TFLOP/s; at $d = 16$ the GEMMs are tiny and the softmax dominates — the FMA bars on the timeline are longer than the tensor bars.`,
    },
    {
      id: 'half',
      title: 'FP16 accumulation',
      text: tex`The modelled build (TensorRT-LLM cpp/kernels/fmha_v2, fmha_v2_flash_attention_fp16_128_128_S_qkv_16_sm89) sets \`HALF_ACCUMULATION_FOR_FLASH_ATTENTION\`: the MMAs accumulate in FP16, which GeForce Ada runs at twice the FP32-accumulate rate. FlashScope's numeric fmha_v2 rounds the accumulator to FP16 after every add, so its error against the float64 reference is visibly larger than FA2's.`,
    },
  ],
  steps: {
    skip: tex`An empty tile of the block mask: no \`LDGSTS\` copy fills the other buffer with this block and no \`mma.sync\` runs for it.`,
    load: tex`Each warp's share of one \`LDGSTS\` commit group (Q with the first K/V, then K/V of the next block into the other buffer); the cursor is the completion of the last warp's share.`,
    qk: tex`\`mma.sync\` $S = QK_j^\top$ for this warp's 32 rows on its sub-partition's tensor core.`,
    mask: tex`Causal masking on the warp's registers (FMA pipe), only on the diagonal block.`,
    rowmax: tex`Row max (and the rescale of $O$ after the first block) on the FMA pipe, in registers.`,
    exp: tex`Exponentials on the warp's sub-partition MUFU.`,
    rowsum: tex`Row sum and conversion of $P$; at $d = 16$ this is the longest op of the loop.`,
    rescale: tex`$O \leftarrow e^{m_{\text{old}}-m_{\text{new}}} O$ in registers, part of the row-max op on the timeline.`,
    pv: tex`\`mma.sync\` $O \mathrel{+}= P V_j$ with FP16 accumulation.`,
    normalize: tex`$O / \ell$ and conversion in registers.`,
    write: tex`Each warp stores its rows of $O$ to global memory.`,
    combine: tex`fmha_v2 does not split K/V; no combine step.`,
  },
};
