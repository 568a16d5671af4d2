// A compare pane's tile goes through the problem panel's conversion: an untyped Br × Bc is the
// algorithm's own, resolved once by the load (passBlocks) from the descriptor, never written
// into the pane as text; a typed tile stays as typed and is checked like the panel's.

import { beforeEach, describe, expect, it } from 'vitest';
import { descriptorOf } from '../../engine/algorithms/registry.ts';
import { capBlocks } from '../../engine/core/size-model.ts';
import { passBlocks } from '../../engine/request.ts';
import { markTouched, useDefaults } from '../defaults/form-defaults.ts';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { chooseCompareAlgorithm } from './compare-defaults.ts';
import { useCompare } from './compare-store.ts';
import { DEFAULT_PANES, comparePaneId } from './pane-config.ts';
import { paneRequest, SHARED_PANE } from './shared-request.ts';

function share(fields: Partial<typeof DEFAULT_FORM>) {
  const req = formToRequest({ ...DEFAULT_FORM, ...fields });
  useApp.getState().addPane(SHARED_PANE, []);
  useApp.getState().setApplied(SHARED_PANE, req);
  return req;
}

/** The tile a pane's load runs: the request's, resolved the one way the session resolves it. */
function paneTile(index: number) {
  const req = paneRequest(useApp.getState().problem[SHARED_PANE]!.applied!, useCompare.getState().panes[index]);
  return passBlocks(req, req.problem);
}

beforeEach(() => {
  useDefaults.setState({ touched: {}, replaced: {} });
  useCompare.setState({ panes: DEFAULT_PANES.map((p) => structuredClone(p)) });
});

describe('compare pane tile', () => {
  it("the default panes start on their descriptors' starting tile", () => {
    share({});
    for (const [i, p] of DEFAULT_PANES.entries()) {
      const start = descriptorOf(p.algorithm).defaults.tile!;
      expect([p.blockM, p.blockN]).toEqual([String(start.blockM), String(start.blockN)]);
      expect(paneTile(i)).toEqual(start);
    }
  });

  it("sage picked in a pane runs its kernel's own tile (the descriptor's), not 16×16", () => {
    const req = share({ algorithm: 'sage', nq: '256', nk: '256', d: '64', dv: '64', dtype: 'fp16' });
    chooseCompareAlgorithm(1, 'sage');
    const cfg = useCompare.getState().panes[1];
    expect([cfg.blockM, cfg.blockN]).toEqual(['', '']);
    const own = descriptorOf('sage').tiles(req.problem);
    expect(paneTile(1)).toEqual(capBlocks(req.problem, own.blockM, own.blockN));
    expect(paneTile(1)).toEqual({ blockM: 128, blockN: 64 });
  });

  it('a kernel picked in a pane leaves Br and Bc empty and its load resolves the kernel tile', () => {
    const req = share({ algorithm: 'fa4', nq: '256', nk: '256', d: '128', dv: '128', dtype: 'bf16' });
    chooseCompareAlgorithm(0, 'fa4');
    const cfg = useCompare.getState().panes[0];
    expect([cfg.blockM, cfg.blockN]).toEqual(['', '']);
    expect(paneTile(0)).toEqual(passBlocks({ ...req, algorithm: 'fa4', blocks: {} }, req.problem));
  });

  it('a tile the person typed stays through an algorithm choice', () => {
    share({ nq: '256', nk: '256', d: '64', dv: '64', dtype: 'fp16' });
    useCompare.getState().setPane(1, { blockM: '32', blockN: '' });
    markTouched(comparePaneId(1), ['blockM']);
    chooseCompareAlgorithm(1, 'sage');
    const cfg = useCompare.getState().panes[1];
    expect([cfg.blockM, cfg.blockN]).toEqual(['32', '']);
    expect(paneTile(1)).toEqual({ blockM: 32, blockN: 64 });
  });

  it("takes Br and Bc as the problem panel does: 'auto' is the algorithm's own, a bad side names its field", () => {
    const base = share({});
    const pane = { ...DEFAULT_PANES[0], blockM: 'auto', blockN: ' ' };
    expect(paneRequest(base, pane).blocks).toEqual({});
    expect(() => paneRequest(base, { ...pane, blockM: '0' })).toThrow(/^Br: /);
    expect(() => paneRequest(base, { ...pane, blockN: '8x' })).toThrow(/^Bc: /);
  });
});
