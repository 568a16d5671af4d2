// Colour legend: the scale's gradient with d3 ticks, plus swatches for "not computed" and "masked".

import { scaleLinear, scalePow } from 'd3';
import { memo, useEffect, useRef } from 'react';
import { CLIPPED, MASKED, NOT_COMPUTED, type ColourScale } from './colour.ts';
import { spacedTicks } from './legend-ticks.ts';

const rgbCss = (c: [number, number, number]) => `rgb(${c[0]},${c[1]},${c[2]})`;

function LegendImpl({
  scale,
  label,
  showMasked,
  marksLabel,
  complete,
}: {
  scale: ColourScale;
  label: string;
  showMasked?: boolean;
  marksLabel?: string;
  complete?: boolean;
}) {
  const ref = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const ctx = ref.current?.getContext('2d');
    if (!ctx) return;
    for (let x = 0; x < 128; x++) {
      ctx.fillStyle = scale.interpolate(x / 127);
      ctx.fillRect(x, 0, 1, 8);
    }
  }, [scale]);
  // Ticks sit where their values are painted (on a square-root scale, low values spread
  // out), on the scale's own domain: a "nice" domain would move them off their colours.
  const ticks = (scale.gamma === 1 ? scaleLinear() : scalePow().exponent(scale.gamma)).domain(scale.domain).range([0, 128]);
  return (
    <fieldset
      className="legend bare"
      aria-label={`${label} colour legend from ${scale.domain[0].toPrecision(3)} to ${scale.domain[1].toPrecision(3)}`}
    >
      <div className="legend-bar">
        {/* biome-ignore lint/a11y/noAriaHiddenOnFocusable: a canvas without tabIndex takes no focus; the group's label says what the bar shows */}
        <canvas ref={ref} width={128} height={8} aria-hidden="true" />
        <div className="legend-ticks">
          {spacedTicks(ticks.ticks(3), ticks).map(({ t, x, label }) => (
            <span key={t} style={{ left: `${x}px` }}>
              {label}
            </span>
          ))}
        </div>
      </div>
      {scale.gamma !== 1 && <span className="legend-note">{scale.gamma === 0.5 ? 'square-root scale' : `power ${scale.gamma} scale`}</span>}
      {scale.clips && (
        <>
          <span className="swatch" style={{ background: rgbCss(CLIPPED) }} />
          <span className="legend-note" data-testid="legend-clipped">
            beyond ±{scale.domain[1].toPrecision(3)} (clipped)
          </span>
        </>
      )}
      {!complete && (
        <>
          <span
            className="swatch"
            style={{
              background: `repeating-conic-gradient(${rgbCss(NOT_COMPUTED[0])} 0 25%, ${rgbCss(NOT_COMPUTED[1])} 0 50%) 0 0/6px 6px`,
            }}
          />
          <span className="legend-note">not computed</span>
        </>
      )}
      {showMasked && (
        <>
          <span
            className="swatch"
            style={{ background: `repeating-linear-gradient(45deg, ${rgbCss(MASKED[0])} 0 2px, ${rgbCss(MASKED[1])} 2px 4px)` }}
          />
          <span className="legend-note">masked</span>
        </>
      )}
      {marksLabel && (
        <>
          <span className="swatch mark-swatch" />
          <span className="legend-note" data-testid="legend-marks">
            {marksLabel}
          </span>
        </>
      )}
    </fieldset>
  );
}

export const Legend = memo(LegendImpl);
