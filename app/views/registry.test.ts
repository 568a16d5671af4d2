// The views menu names every view as the views write their symbols: the running sum is ℓ.

import { describe, expect, it } from 'vitest';
import { VIEWS } from './registry.ts';

describe('view titles', () => {
  it('write ℓ, never a bare l', () => {
    expect(VIEWS.find((v) => v.id === 'hbm')?.title).toBe('HBM m and ℓ');
    for (const v of VIEWS) expect(v.title, v.id).not.toMatch(/(?<![\p{L}\p{N}_])l(?![\p{L}\p{N}])/u);
  });
});
