import { describe, expect, it } from 'vitest';
import { scalePow } from 'd3';
import { CHAR_PX, spacedTicks } from './legend-ticks.ts';

describe('legend ticks', () => {
  it('drops ticks whose labels would overlap on a square-root scale, keeping 0 and spaced ones', () => {
    const at = scalePow().exponent(0.5).domain([0, 0.004]).range([0, 128]);
    const all = at.ticks(3);
    const kept = spacedTicks(all, at);
    expect(kept.length).toBeLessThan(all.length);
    expect(kept[0].t).toBe(0);
    for (let i = 1; i < kept.length; i++) {
      const gap = kept[i].x - kept[i - 1].x;
      expect(gap).toBeGreaterThanOrEqual(((kept[i].label.length + kept[i - 1].label.length) / 2) * CHAR_PX + 4);
    }
  });
  it('keeps every tick of a linear scale with room for them', () => {
    const at = (v: number) => (v / 10) * 128;
    expect(spacedTicks([0, 5, 10], at).map((t) => t.label)).toEqual(['0', '5', '10']);
  });
});
