import { tex, type HardwareLesson } from './types.ts';

export const flashDecodingHardware: HardwareLesson = {
  algorithm: 'flash-decoding',
  title: 'Flash-decoding: splitting K/V to fill the GPU',
  topics: [
    {
      id: 'why',
      title: 'Why split',
      text: tex`In decoding, $N_q$ is 1 (or a few) and the work per $(b, h)$ is a long scan over $N_k$ keys. One CTA per $(b, h)$ gives $B\cdot H$ CTAs: with $B\cdot H = 16$ on a 132-SM H100, 88% of the SMs idle while 16 stream the whole KV cache. Flash-decoding splits the keys into $s$ ranges and launches $B\cdot H\cdot s$ CTAs; FA2's heuristic picks the smallest $s$ whose wave efficiency is within 85% of the best. The header line of the views says which CTA and split this SM runs.`,
    },
    {
      id: 'combine',
      title: 'The LSE combine',
      text: tex`Split $i$ returns its partial output $O_i$, normalized by its own $\ell_i$, and its log-sum-exp $\mathrm{LSE}_i = m_i + \log \ell_i$. A second kernel merges them exactly:
$$\mathrm{LSE} = \log \sum_i e^{\mathrm{LSE}_i}, \qquad O = \sum_i e^{\mathrm{LSE}_i - \mathrm{LSE}}\, O_i .$$
It is computed stably with $\max_i \mathrm{LSE}_i$ subtracted first. The combine kernel runs after the split kernel, so it has no place on this SM's timeline: on a combine step the cursor stays at the end of the split's work.`,
    },
    {
      id: 'bandwidth',
      title: 'Bandwidth, not FLOPs',
      text: tex`Every K/V byte is read once and used for a handful of query rows, so the kernel is bound by HBM bandwidth; the schedule gives each SM its share of HBM, not of L2. The HBM traffic view shows K and V dominating, plus the partial $O$ and LSE written and re-read by the combine.`,
    },
  ],
  steps: {
    skip: tex`An empty tile of the block mask: no query row of the split may see a key of this block, so no \`cp.async\` copy or \`mma.sync\` is issued for it.`,
    load: tex`\`cp.async\` of $Q$ and this split's K/V blocks.`,
    qk: tex`\`mma.sync\` $S = QK_j^\top$ — for one query row the MMA tile is mostly padding.`,
    mask: tex`Masking in registers.`,
    rowmax: tex`Row max (and the rescale of $O$ after the first block of the split).`,
    exp: tex`Exponentials on MUFU.`,
    rowsum: tex`Row sum in registers.`,
    rescale: tex`Rescale of the split's accumulator, part of the row-max op.`,
    pv: tex`\`mma.sync\` $O_i \mathrel{+}= PV_j$.`,
    normalize: tex`$O_i / \ell_i$ and $\mathrm{LSE}_i = m_i + \log \ell_i$ for the combine.`,
    write: tex`Partial $O_i$ and $\mathrm{LSE}_i$ in FP32 to HBM (or the final $O$ when there is one split).`,
    combine: tex`The second kernel: $O = \sum_i e^{\mathrm{LSE}_i - \mathrm{LSE}} O_i$; not on the split kernel's timeline.`,
  },
};
