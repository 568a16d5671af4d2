// Chapter 12's FP8 explorer: type a value (or drag the log-scale slider) and see the nearest
// e4m3 and e5m2 values, their sign/exponent/mantissa bits, the relative error, and where they
// sit among every representable value on a log-scale number line (subnormals, the largest
// value, the saturating region past it, the flush-to-zero region below the smallest).

import { scaleLog } from 'd3';
import { useMemo, useState } from 'react';
import { finiteValues, formatMax, FORMATS, nearest, parseValue, type Fp8Name, type Rounded } from './fp8-formats.ts';

const NAMES: Fp8Name[] = ['e4m3', 'e5m2'];
const LOG_MIN = -18;
const LOG_MAX = 17;
const W = 640;
const ROW_Y: Record<Fp8Name, number> = { e4m3: 34, e5m2: 74 };
const PRESETS = ['300', '448', '500', '0.1', '2^-9', '2^-10', '60000'];

const fmt = (x: number) =>
  x === 0 ? '0' : Math.abs(x) >= 1e-3 && Math.abs(x) < 1e6 ? String(Number(x.toPrecision(6))) : x.toExponential(4);
const pct = (x: number) => (x === 0 ? '0 (exact)' : x >= 0.9999 ? '100%' : `${Number((x * 100).toPrecision(3))}%`);
const superscript = (n: number) =>
  String(n)
    .replace(/-/g, '⁻')
    .replace(/\d/g, (d) => '⁰¹²³⁴⁵⁶⁷⁸⁹'[Number(d)]);

function status(r: Rounded, name: Fp8Name): string {
  if (r.saturated) return `saturated: past ${formatMax(FORMATS[name])}, the cast clamps to ±max`;
  if (r.flushed) return 'flushed to zero: at or below half the smallest subnormal';
  if (r.fields.kind === 'subnormal') return 'subnormal: exponent field 0, fewer significant bits';
  if (r.fields.kind === 'zero') return 'zero';
  return 'normal';
}

function FormatCard({ name, r }: { name: Fp8Name; r: Rounded }) {
  const f = FORMATS[name];
  return (
    <div className="fp8-card" data-testid={`fp8-${name}`}>
      <h4>
        {name}{' '}
        <span className="dim">
          (1 sign, {f.expBits} exponent, {f.manBits} mantissa bits, bias {f.bias})
        </span>
      </h4>
      <p>
        nearest value <strong data-testid={`fp8-${name}-value`}>{fmt(r.value)}</strong>
      </p>
      <p
        className="fp8-bits"
        role="img"
        aria-label={`${name} bits: sign ${r.fields.bits.sign}, exponent ${r.fields.bits.exponent}, mantissa ${r.fields.bits.mantissa}`}
      >
        <span className="bit-s" title="sign">
          {r.fields.bits.sign}
        </span>
        <span className="bit-e" title="exponent">
          {r.fields.bits.exponent}
        </span>
        <span className="bit-m" title="mantissa">
          {r.fields.bits.mantissa}
        </span>
        <span className="dim" data-testid={`fp8-${name}-code`}>
          {' '}
          code 0x{r.code.toString(16).padStart(2, '0')}
        </span>
      </p>
      <p className="dim fp8-formula">= {r.fields.formula}</p>
      <p>
        relative error <span data-testid={`fp8-${name}-err`}>{pct(r.relError)}</span>
      </p>
      <p className={`fp8-status ${r.saturated || r.flushed ? 'warn' : ''}`} data-testid={`fp8-${name}-status`}>
        {status(r, name)}
      </p>
    </div>
  );
}

function NumberLine({ x, rounded }: { x: number; rounded: Record<Fp8Name, Rounded> }) {
  const sx = useMemo(
    () =>
      scaleLog()
        .base(2)
        .domain([2 ** LOG_MIN, 2 ** LOG_MAX])
        .range([56, W - 10])
        .clamp(true),
    [],
  );
  const ticks = [];
  for (let k = -16; k <= 16; k += 4) ticks.push(k);
  const a = Math.abs(x);
  return (
    <svg
      className="fp8-line"
      viewBox={`0 0 ${W} 112`}
      role="img"
      aria-label={`Every positive e4m3 and e5m2 value on a log scale; |x| = ${fmt(a)}`}
    >
      {NAMES.map((n) => {
        const f = FORMATS[n];
        const t = finiteValues(f).filter((v) => v.value > 0);
        const max = formatMax(f);
        const minSub = t[0].value;
        const y = ROW_Y[n];
        const r = rounded[n];
        return (
          <g key={n}>
            <text x={4} y={y + 4} className="fp8-row-label">
              {n}
            </text>
            <rect x={sx(2 ** LOG_MIN)} y={y - 9} width={sx(minSub / 2) - sx(2 ** LOG_MIN)} height={18} className="fp8-zone flush">
              <title>{`below ${fmt(minSub / 2)}: rounds to 0`}</title>
            </rect>
            <rect x={sx(max)} y={y - 9} width={sx(2 ** LOG_MAX) - sx(max)} height={18} className="fp8-zone sat">
              <title>{`past ${max}: saturates to ${max}`}</title>
            </rect>
            <line x1={sx(minSub)} x2={sx(max)} y1={y} y2={y} className="fp8-axis" />
            {t.map((v) => (
              <line
                key={v.code}
                x1={sx(v.value)}
                x2={sx(v.value)}
                y1={y - 7}
                y2={y + 7}
                className={v.subnormal ? 'fp8-tick sub' : 'fp8-tick'}
              />
            ))}
            {r.value !== 0 && <circle cx={sx(Math.abs(r.value))} cy={y} r={5} className="fp8-pick" />}
            <text x={sx(max)} y={y - 12} className="fp8-label" textAnchor="middle">
              {max}
            </text>
            <text x={sx(minSub)} y={y - 12} className="fp8-label" textAnchor="middle">
              2{superscript(Math.log2(minSub))}
            </text>
          </g>
        );
      })}
      {a > 0 && <line x1={sx(a)} x2={sx(a)} y1={18} y2={90} className="fp8-marker" />}
      {ticks.map((k) => (
        <text key={k} x={sx(2 ** k)} y={106} className="fp8-label" textAnchor="middle">
          2{superscript(k)}
        </text>
      ))}
    </svg>
  );
}

export function Fp8FormatsWidget() {
  const [text, setText] = useState('300');
  const [x, setX] = useState(300);
  const parsed = parseValue(text);
  const error = 'error' in parsed ? parsed.error : null;
  const rounded = useMemo(() => ({ e4m3: nearest(FORMATS.e4m3, x), e5m2: nearest(FORMATS.e5m2, x) }), [x]);
  const log = x === 0 ? LOG_MIN : Math.min(LOG_MAX, Math.max(LOG_MIN, Math.log2(Math.abs(x))));

  const type = (t: string) => {
    setText(t);
    const p = parseValue(t);
    if ('value' in p) setX(p.value);
  };
  const slide = (v: number) => {
    const sign = x < 0 ? -1 : 1;
    const nx = sign * Number((2 ** v).toPrecision(4));
    setX(nx);
    setText(String(nx));
  };

  return (
    <section className="widget fp8-formats" aria-label="FP8 formats: e4m3 and e5m2" onKeyDown={(e) => e.stopPropagation()}>
      <h3>e4m3 and e5m2, value by value</h3>
      <div className="fp8-controls">
        <label>
          Value{' '}
          <input
            type="text"
            className="fp8-input"
            value={text}
            onChange={(e) => type(e.target.value)}
            aria-label="Value to round"
            aria-invalid={!!error}
            aria-describedby="fp8-input-help"
          />
        </label>
        <label className="fp8-slider">
          |value| on a log scale{' '}
          <input
            type="range"
            min={LOG_MIN}
            max={LOG_MAX}
            step={0.125}
            value={log}
            onChange={(e) => slide(Number(e.target.value))}
            aria-label="Magnitude (log scale)"
            aria-valuetext={`${fmt(Math.abs(x))}`}
          />
        </label>
        <button type="button" onClick={() => type(String(-x))}>
          ± sign
        </button>
      </div>
      <p className="dim" id="fp8-input-help">
        Type a number (300, 1e-3, 2^-9), drag the slider or use its arrow keys. Try:{' '}
        {PRESETS.map((p) => (
          <button key={p} type="button" className="linkish fp8-preset" onClick={() => type(p)}>
            {p}
          </button>
        ))}
      </p>
      {error && (
        <p className="error" role="alert" data-testid="fp8-error">
          {error} Showing {fmt(x)} meanwhile.
        </p>
      )}
      <div className="fp8-cards">
        {NAMES.map((n) => (
          <FormatCard key={n} name={n} r={rounded[n]} />
        ))}
      </div>
      <NumberLine x={x} rounded={rounded} />
      <p className="hint">
        Every tick is a representable positive value (pale ticks: subnormals); the dot is the nearest one, the vertical line your value. In
        the shaded zone on the left a value rounds to 0; in the one on the right, past the largest value (448, 57344), the kernels&apos;
        conversion clamps to it. e4m3 has {finiteValues(FORMATS.e4m3).length - 1} positive finite values, e5m2{' '}
        {finiteValues(FORMATS.e5m2).length - 1}.
      </p>
    </section>
  );
}
