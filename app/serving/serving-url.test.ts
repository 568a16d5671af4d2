// The serving page in the share link: round trip, and damaged parts replaced by defaults with a notice.

import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVING_FORM } from '../../engine/layouts/serving-run.ts';
import { decodeState, defaultSharedState, encodeState } from '../share/url-state.ts';

describe('serving state in the link', () => {
  it('round-trips the serving form and step', () => {
    const s = defaultSharedState(['heatmaps']);
    s.serving = {
      form: { ...DEFAULT_SERVING_FORM, layout: 'paged', algorithm: 'fmha-v2', seqlensK: [70, 0, 33], pageSize: 32, nq: 4 },
      step: 17,
      files: false,
    };
    const back = decodeState(encodeState(s), ['heatmaps']);
    expect(back.notices.filter((n) => /serving/.test(n))).toEqual([]);
    expect(back.state.serving).toEqual(s.serving);
  });
  it('replaces unreadable fields with defaults, one notice each', () => {
    const s = defaultSharedState(['heatmaps']);
    s.serving = { form: { ...DEFAULT_SERVING_FORM, pageSize: -4 as number, algorithm: 'nope' }, step: 3, files: true };
    const back = decodeState(encodeState(s), ['heatmaps']);
    expect(back.state.serving!.form.pageSize).toBe(DEFAULT_SERVING_FORM.pageSize);
    expect(back.state.serving!.form.algorithm).toBe(DEFAULT_SERVING_FORM.algorithm);
    expect(back.notices.some((n) => /serving pageSize -4 is not valid/.test(n))).toBe(true);
    expect(back.notices.some((n) => /serving algorithm "nope"/.test(n))).toBe(true);
    expect(back.notices.some((n) => /tensors from files/.test(n))).toBe(true);
  });
  it('a link without the serving part leaves the page closed', () => {
    expect(decodeState(encodeState(defaultSharedState(['heatmaps'])), ['heatmaps']).state.serving).toBeUndefined();
  });
});
