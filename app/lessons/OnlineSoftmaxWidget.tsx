// Chapter 2's vector: drag a bar (or focus it and press ↑/↓) and the online-softmax table
// follows element by element, checked against the three-pass safe softmax.

import { useMemo, useRef, useState, type KeyboardEvent, type PointerEvent } from 'react';
import { onlineSoftmaxSteps, safeSoftmax, softmaxFromOnline } from '../../content/lessons/chapters/online-softmax.ts';
import { Tex } from './RichText.tsx';

const LO = -6;
const HI = 6;
const W = 44;
const H = 160;
const START = [1.2, -0.5, 2.8, 0.3, 4.1, 3.9, -2.0, 5.0];

const fmt = (x: number) => (Number.isFinite(x) ? String(Number(x.toPrecision(4))) : x > 0 ? '∞' : '−∞');
const clamp = (v: number) => Math.max(LO, Math.min(HI, Math.round(v * 10) / 10));
const y = (v: number) => ((HI - v) / (HI - LO)) * H;

export function OnlineSoftmaxWidget() {
  const [x, setX] = useState<number[]>(START);
  const [upTo, setUpTo] = useState(START.length);
  const svg = useRef<SVGSVGElement>(null);
  const drag = useRef<number | null>(null);
  const steps = useMemo(() => onlineSoftmaxSteps(x), [x]);
  const safe = useMemo(() => safeSoftmax(x), [x]);
  const online = useMemo(() => softmaxFromOnline(x), [x]);
  const maxDiff = Math.max(...safe.map((p, i) => Math.abs(p - online[i])));

  const setAt = (i: number, v: number) => setX((xs) => xs.map((old, j) => (j === i ? clamp(v) : old)));
  const valueAt = (e: PointerEvent) => {
    const r = svg.current!.getBoundingClientRect();
    const py = ((e.clientY - r.top) / r.height) * (H + 20) - 10;
    return HI - (py / H) * (HI - LO);
  };
  const onKey = (i: number) => (e: KeyboardEvent) => {
    const d = e.shiftKey ? 1 : 0.1;
    if (e.key === 'ArrowUp') setAt(i, x[i] + d);
    else if (e.key === 'ArrowDown') setAt(i, x[i] - d);
    else return;
    e.preventDefault();
  };

  return (
    <section className="widget online-softmax" aria-label="Online softmax on one vector" onKeyDown={(e) => e.stopPropagation()}>
      <h3>Online softmax, element by element</h3>
      <div className="os-body">
        {/* biome-ignore lint/a11y/useSemanticElements: an svg cannot be a fieldset; the group names the bars the pointer and arrow keys move */}
        <svg
          ref={svg}
          viewBox={`0 -10 ${x.length * W + 30} ${H + 20}`}
          className="os-bars"
          role="group"
          aria-label="Vector x (drag the bars)"
        >
          <line x1={24} x2={x.length * W + 28} y1={y(0)} y2={y(0)} className="os-axis" />
          <text x={0} y={y(HI) + 4} className="os-tick">
            {HI}
          </text>
          <text x={4} y={y(0) + 4} className="os-tick">
            0
          </text>
          <text x={0} y={y(LO)} className="os-tick">
            {LO}
          </text>
          {x.map((v, i) => {
            const s = steps[i];
            const grew = i > 0 && s.factor < 1;
            return (
              <g
                key={i}
                tabIndex={0}
                role="slider"
                aria-label={`x${i + 1}`}
                aria-valuemin={LO}
                aria-valuemax={HI}
                aria-valuenow={v}
                data-testid={`os-bar-${i}`}
                className={`os-bar ${i < upTo ? '' : 'later'} ${grew ? 'grew' : ''}`}
                onKeyDown={onKey(i)}
                onPointerDown={(e) => {
                  drag.current = i;
                  (e.currentTarget as Element).setPointerCapture(e.pointerId);
                  setAt(i, valueAt(e));
                }}
                onPointerMove={(e) => drag.current === i && setAt(i, valueAt(e))}
                onPointerUp={() => (drag.current = null)}
              >
                <rect x={28 + i * W} y={-10} width={W - 8} height={H + 20} className="os-hit" />
                <rect
                  x={28 + i * W}
                  y={Math.min(y(v), y(0))}
                  width={W - 8}
                  height={Math.max(1, Math.abs(y(v) - y(0)))}
                  className="os-fill"
                />
                <text x={28 + i * W + (W - 8) / 2} y={v >= 0 ? y(v) - 3 : y(v) + 11} className="os-val" textAnchor="middle">
                  {fmt(v)}
                </text>
              </g>
            );
          })}
        </svg>
        <div className="os-table-wrap">
          <label className="os-upto">
            Elements processed: <strong data-testid="os-upto">{upTo}</strong>
            <input
              type="range"
              min={1}
              max={x.length}
              value={upTo}
              onChange={(e) => setUpTo(Number(e.target.value))}
              aria-label="Elements processed"
            />
          </label>
          <table className="num-table os-table">
            <thead>
              <tr>
                <th>i</th>
                <th>
                  <Tex tex="x_i" />
                </th>
                <th>
                  <Tex tex="m_i" />
                </th>
                <th>
                  <Tex tex="e^{m_{i-1}-m_i}" />
                </th>
                <th>
                  <Tex tex="e^{x_i-m_i}" />
                </th>
                <th>
                  <Tex tex="\ell_i" />
                </th>
              </tr>
            </thead>
            <tbody>
              {steps.slice(0, upTo).map((s) => (
                <tr key={s.i} className={s.i > 0 && s.factor < 1 ? 'grew' : ''} data-testid={`os-row-${s.i}`}>
                  <td>{s.i + 1}</td>
                  <td>{fmt(s.x)}</td>
                  <td>{fmt(s.m)}</td>
                  <td>{s.i === 0 ? '—' : fmt(s.factor)}</td>
                  <td>{fmt(s.term)}</td>
                  <td data-testid={`os-l-${s.i}`}>{fmt(s.l)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
      <p className="hint">
        Highlighted rows: the max grew, so the old sum was multiplied by a factor below 1. After all {x.length} elements, the online pass
        gives the same probabilities as the three-pass safe softmax: largest difference{' '}
        <span data-testid="os-diff">{maxDiff.toExponential(1)}</span>.
      </p>
    </section>
  );
}
