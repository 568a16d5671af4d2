import { scaleLinear } from 'd3';
import { describe, expect, it } from 'vitest';
import { axisTickCount, tickLabel, tickLabelXs, timelineFontPx } from './timeline-axis.ts';

/** Width of a system-ui label, generously: 0.65 of its size per character. */
const labelPx = (s: string, font: number) => 0.65 * font * s.length;

describe('timeline cycle axis', () => {
  // 200 px: a 390 px phone's plot after the lane labels; 1200 px: a wide desktop.
  for (const plot of [182, 200, 240, 320, 480, 760, 1200])
    for (const font of [10, 12])
      for (const cycles of [900, 7_800, 43_000, 250_000])
        it(`labels never touch on a ${plot} px plot of ${cycles} cycles at ${font} px`, () => {
          const x = scaleLinear().domain([0, cycles]).range([0, plot]);
          const ticks = x.ticks(axisTickCount(plot, font));
          expect(ticks.length).toBeGreaterThanOrEqual(2);
          for (let i = 1; i < ticks.length; i++)
            expect(x(ticks[i]) - x(ticks[i - 1])).toBeGreaterThan(labelPx(tickLabel(ticks[i - 1]), font) + 2);
        });

  it('labels thousands from 10 000 cycles on', () => {
    expect(tickLabel(8000)).toBe('8000');
    expect(tickLabel(12_000)).toBe('12k');
  });

  it("reads at 12 px on a phone's chart (322 px at 390) and keeps 10 px on a desktop's", () => {
    expect(timelineFontPx(322)).toEqual({ axis: 12, lane: 12 });
    expect(timelineFontPx(1000).axis).toBe(10);
  });

  it('pulls the last label inside the plot instead of cutting it, and drops one that would then touch the label before', () => {
    // 8000 at 316 of a 320 px chart: drawn from 290, ending at the edge.
    expect(
      tickLabelXs(
        [
          { px: 120, textPx: 7 },
          { px: 216, textPx: 28 },
          { px: 316, textPx: 28 },
        ],
        318,
      ),
    ).toEqual([122, 218, 290]);
    // Pulled left onto the label before it: left out.
    expect(
      tickLabelXs(
        [
          { px: 250, textPx: 28 },
          { px: 300, textPx: 28 },
        ],
        302,
      ),
    ).toEqual([252, null]);
  });
});
