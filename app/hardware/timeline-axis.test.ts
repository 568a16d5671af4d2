import { scaleLinear } from 'd3';
import { describe, expect, it } from 'vitest';
import { axisTickCount, tickLabel } from './timeline-axis.ts';

/** Width of a 10 px system-ui label, generously: 6.5 px per character. */
const labelPx = (s: string) => 6.5 * s.length;

describe('timeline cycle axis', () => {
  // 182 px: a 390 px phone's plot after the lane labels; 1200 px: a wide desktop.
  for (const plot of [182, 240, 320, 480, 760, 1200])
    for (const cycles of [900, 7_800, 43_000, 250_000])
      it(`labels never touch on a ${plot} px plot of ${cycles} cycles`, () => {
        const x = scaleLinear().domain([0, cycles]).range([0, plot]);
        const ticks = x.ticks(axisTickCount(plot));
        expect(ticks.length).toBeGreaterThanOrEqual(2);
        for (let i = 1; i < ticks.length; i++) expect(x(ticks[i]) - x(ticks[i - 1])).toBeGreaterThan(labelPx(tickLabel(ticks[i - 1])) + 2);
      });

  it('labels thousands from 10 000 cycles on', () => {
    expect(tickLabel(8000)).toBe('8000');
    expect(tickLabel(12_000)).toBe('12k');
  });
});
