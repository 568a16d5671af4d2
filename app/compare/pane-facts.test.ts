// The differences note names the dtype a pane's request carries, which is the dtype it ran.

import { describe, expect, it } from 'vitest';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import { paneFacts } from './pane-facts.ts';
import { paneRequest } from './shared-request.ts';

describe('a compare pane in the differences note', () => {
  const cfg: ComparePaneConfig = { algorithm: 'fa3', dtype: 'fp8e4m3', blockM: '', blockN: '', features: {}, views: [] };
  const tile = { blockM: 64, blockN: 64 };

  it("over tensors from files: the files' dtype, which its request sends, not the pane's own", () => {
    const files = { ...formToRequest({ ...DEFAULT_FORM, dtype: 'fp16' }), tensors: { files: [], names: [] } as never };
    const f = paneFacts(files, cfg, 1, tile, 'H100');
    expect(f.dtype).toBe(paneRequest(files, cfg).problem.dtype);
    expect(f.dtype).toBe('fp16');
    expect(f).toMatchObject({ pane: 2, tile: [64, 64], gpu: 'H100', name: 'FlashAttention-3 (Hopper, SM90)' });
  });

  it("over random inputs: the pane's own dtype, or the shared one when it has none", () => {
    const random = formToRequest({ ...DEFAULT_FORM, dtype: 'fp16' });
    expect(paneFacts(random, cfg, 0, tile, undefined).dtype).toBe('fp8e4m3');
    expect(paneFacts(random, { ...cfg, dtype: undefined }, 0, tile, undefined).dtype).toBe('fp16');
  });
});
