import { tex, type HardwareLesson } from './types.ts';

export const cuteFa2Hardware: HardwareLesson = {
  algorithm: 'cute-fa2',
  title: 'The CuTe FA2 pipeline (SM80)',
  topics: [
    {
      id: 'pipeline',
      title: 'Copies under the GEMMs',
      text: tex`The tiny-flash-attention CuTe kernel (github.com/66RING/tiny-flash-attention, flash_attention_cutlass/) keeps one shared-memory buffer each for $Q$, $K$ and $V$ and overlaps copies with compute by ordering them:
$$\text{cp.async } V_j \ \|\ S = QK_j^\top, \qquad \text{cp.async } K_{j+1} \ \|\ \text{softmax},\ O \mathrel{+}= PV_j .$$
Each copy is issued right after the buffer it overwrites was last read (a \`__syncthreads\` marks that point), so with a single buffer per tensor the memory map shows $sK$ and $sV$ alternately refilled.`,
    },
    {
      id: 'warps',
      title: 'Warps and tiles',
      text: tex`Four warps split the Q tile by rows; each uses \`mma.sync\` (m16n8k16) from registers loaded with \`ldmatrix\`. On Hopper and Blackwell the same code still runs, but \`mma.sync\` reaches only part of the native tensor rate — the resource sheet's note says how much.`,
    },
  ],
  steps: {
    skip: tex`A block outside $[n_{\text{block,min}}, n_{\text{block,max}})$: no key of it is visible to the $Q$ tile, so it is never copied or multiplied.`,
    load: tex`A \`cp.async\` group issued by every warp (a quarter each); the tile fills its single buffer.`,
    qk: tex`\`mma.sync\` $S = QK_j^\top$ while $V_j$ is still in flight.`,
    mask: tex`Masking of the diagonal block in registers.`,
    rowmax: tex`Row max in registers; after the first block also the rescale of $O$.`,
    exp: tex`Exponentials on MUFU; $K_{j+1}$ is already being copied.`,
    rowsum: tex`Row sum and conversion of $P$ to 16 bits.`,
    rescale: tex`Rescale of the register accumulator, part of the row-max op.`,
    pv: tex`\`mma.sync\` $O \mathrel{+}= PV_j$ after waiting for $V_j$'s copy and the barrier.`,
    normalize: tex`$O/\ell$ in registers.`,
    write: tex`Stores of $O$ to global memory.`,
    combine: tex`The CuTe FA2 kernel does not split K/V; no combine step.`,
  },
};
