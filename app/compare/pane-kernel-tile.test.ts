// The differences note's kernel tile is the tile the pane's load runs with empty Br and Bc
// (the session's one resolution, for the pass it runs), not a second reading of the descriptor.

import { describe, expect, it } from 'vitest';
import { descriptorOf } from '../../engine/algorithms/registry.ts';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { DEFAULT_PANES } from './pane-config.ts';
import { paneKernelTile } from './pane-kernel-tile.ts';

const shared = (pass: 'forward' | 'backward') =>
  formToRequest({ ...DEFAULT_FORM, algorithm: 'fa3', pass, nq: '512', nk: '512', d: '128', dv: '128', dtype: 'bf16', causal: true });
const pane = (algorithm: string, blockM = '', blockN = '') =>
  ({ ...DEFAULT_PANES[0], algorithm, blockM, blockN }) as (typeof DEFAULT_PANES)[0];

describe('a compare pane kernel tile', () => {
  it("FA3's backward names the backward kernel's 64×128 tile, not the forward's 128×128", () => {
    expect(descriptorOf('fa3').tiles(shared('backward').problem)).toEqual({ blockM: 128, blockN: 128 });
    expect(paneKernelTile(shared('backward'), pane('fa3'))).toEqual([64, 128]);
    expect(paneKernelTile(shared('forward'), pane('fa3'))).toEqual([128, 128]);
  });

  it("stays the kernel's own when the pane types another tile", () => {
    expect(paneKernelTile(shared('forward'), pane('fa3', '64', '64'))).toEqual([128, 128]);
  });

  it('is absent for an algorithm whose tile is free', () => {
    expect(paneKernelTile(shared('forward'), pane('fa2'))).toBeUndefined();
  });
});
