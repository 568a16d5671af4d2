// The two-masks preset: each pane runs its own mask_mod on the shared problem, matching the
// float64 reference of the built-in causal / window problem it spells.

import { describe, expect, it } from 'vitest';
import { randomInputs } from '../../engine/core/inputs.ts';
import { referenceAttention } from '../../engine/core/reference.ts';
import { algorithmById } from '../../engine/algorithms/registry.ts';
import { runToEnd } from '../../engine/run.ts';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import { decodeState, defaultSharedState, encodeState } from '../share/url-state.ts';
import { DEFAULT_VIEWS } from '../views/registry.ts';
import { MASK_STUDY } from './presets.ts';
import { paneLabel } from './pane-label.ts';
import { paneRequest } from './shared-request.ts';

describe('two-masks compare preset', () => {
  const base = formToRequest({ ...DEFAULT_FORM, ...MASK_STUDY.form });

  it('each pane runs its mask and matches the float64 reference of the built-in mask it spells', () => {
    const builtIn = [{ causal: true }, { causal: true, window: { left: 32, right: 0 } }];
    const qkTiles: number[] = [];
    MASK_STUDY.panes.forEach((cfg, i) => {
      const req = paneRequest(base, cfg);
      expect(req.problem.mask?.maskMod).toBeDefined();
      const x = randomInputs(req.problem, { seed: req.seed, distribution: req.distribution });
      const want = referenceAttention({ ...base.problem, ...builtIn[i] }, x);
      let tiles = 0;
      const got = runToEnd(algorithmById(req.algorithm), req.problem, x, {
        ...req.blocks,
        trace: true,
        onEvent: (e) => void (tiles += e.kind === 'qk' ? 1 : 0),
      });
      let err = 0;
      for (let k = 0; k < want.o.length; k++) err = Math.max(err, Math.abs(got.o[k] - want.o[k]));
      expect(err, paneLabel(cfg, i, base)).toBeLessThan(2e-5);
      qkTiles.push(tiles);
    });
    // 8×8 tile pairs: causal computes 1 + 2 + … + 8 = 36; with the 32-key window Q tile i sees
    // K/V tiles max(0, i − 2) … i, so 1 + 2 + 3·6 = 21.
    expect(qkTiles).toEqual([36, 21]);
  });

  it('a share link carries each pane’s mask; a bad one falls back to the shared mask with a notice', () => {
    const s = defaultSharedState([...DEFAULT_VIEWS]);
    s.mode = 'compare';
    s.compare.panes = MASK_STUDY.panes.map((config) => ({ config: structuredClone(config), step: 0 }));
    const back = decodeState(encodeState(s), DEFAULT_VIEWS);
    expect(back.notices).toEqual([]);
    expect(back.state.compare.panes.map((p) => p.config.maskMod)).toEqual(['causal', 'sliding_window:32']);
    s.compare.panes[1].config.maskMod = 'kv_idx <= q_idx ||';
    const bad = decodeState(encodeState(s), DEFAULT_VIEWS);
    expect(bad.state.compare.panes[1].config.maskMod).toBeUndefined();
    expect(bad.notices.join('\n')).toMatch(/compare pane 2: mask_mod: column \d+: .*; the shared mask is used/);
  });
});
