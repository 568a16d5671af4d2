// Serving files recognised by name in the debugger's Load tensors dialog.

import { describe, expect, it } from 'vitest';
import { servingFilesByName } from './serving-handoff.ts';

const f = (name: string) => new File([new Uint8Array(4)], name);

describe('serving files by name', () => {
  it('varlen: q, k, v and both offsets', () => {
    const r = servingFilesByName(['q.npy', 'k.npy', 'V.npy', 'cu_seqlens_q.npy', 'ck.npy'].map(f));
    expect('error' in r).toBe(false);
    if ('error' in r) return;
    expect(r.layout).toBe('varlen');
    expect(Object.fromEntries(Object.entries(r.files).map(([k, v]) => [k, v.name]))).toEqual({
      q: 'q.npy',
      k: 'k.npy',
      v: 'V.npy',
      cu_seqlens_q: 'cu_seqlens_q.npy',
      cu_seqlens_k: 'ck.npy',
    });
  });
  it('paged as soon as a cache, table or lengths file is there; the missing ones are named', () => {
    const r = servingFilesByName(['q.npy', 'k_cache.npy', 'v_cache.npy', 'block_table.safetensors'].map(f));
    expect(r).toEqual({
      error: expect.stringMatching(
        /^A paged K\/V cache needs files named q\.npy, k_cache\.npy, v_cache\.npy, block_table\.npy, cache_seqlens\.npy; missing: cache_seqlens\.npy\./,
      ),
    });
    const ok = servingFilesByName(['q.npy', 'kc.npy', 'vc.npy', 'bt.npy', 'cache_seqlens.npy'].map(f));
    expect('error' in ok ? ok.error : ok.layout).toBe('paged');
  });
});
