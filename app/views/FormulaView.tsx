// The update the current phase performs, typeset with KaTeX, with the selected row's live
// numbers. Loaded lazily (KaTeX is the largest dependency and is not needed for first paint).

import katex from 'katex';
import 'katex/dist/katex.min.css';
import { useDeferredValue, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { formulaFor } from '../../content/formulas.ts';
import { backwardLive } from '../../content/backward-live.ts';
import { softmaxScale, findDescriptor } from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import { usePane } from '../store/pane-context.ts';

function Tex({ tex: latest, label }: { tex: string; label: string }) {
  // Typeset in a render of its own after the step's commit, so KaTeX never lengthens the task that shows a step.
  const tex = useDeferredValue(latest);
  const html = useMemo(() => katex.renderToString(tex, { throwOnError: false, displayMode: true, output: 'html' }), [tex]);
  const box = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  // An equation wider than its box scrolls there, so the box joins the tab order to be scrollable by keyboard.
  // biome-ignore lint/correctness/useExhaustiveDependencies: only a new equation can overflow; measuring on every render would force a layout in each step’s task
  useLayoutEffect(() => {
    const el = box.current;
    if (el) setScrolls(el.scrollWidth > el.clientWidth);
  }, [html]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setScrolls(el.scrollWidth > el.clientWidth));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return (
    <div
      ref={box}
      className="tex"
      role="math"
      tabIndex={scrolls ? 0 : undefined}
      aria-label={label}
      data-tex={tex}
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}

export default function FormulaView() {
  const { pane } = usePane();
  const frame = useApp((s) => s.playback[pane].textFrame);
  const algorithm = useApp((s) => s.playback[pane].summary?.algorithm);
  const selected = useApp((s) => s.selection[pane].row);
  const inputs = useApp((s) => s.playback[pane].inputs);
  const problem = useApp((s) => s.problem[pane].applied?.problem);
  if (!frame || !algorithm) return null;
  const ev = frame.event;
  const [r0, r1] = ev.tile.rows;
  const row = selected !== null && selected >= r0 && selected < r1 ? selected : r0;
  const entry = frame.history.entries.find((e) => e.kvBlock === ev.tile.kvBlock);
  const f = r1 > r0 ? formulaFor(algorithm, ev, row - r0, entry) : formulaFor(algorithm, ev, 0, entry);
  // dS and the dQ update with one entry's numbers, read from the frame's P, dP, dS and the head's K.
  const g = frame.bwd;
  const extra =
    g && inputs && problem && r1 > r0
      ? backwardLive(ev, row - r0, {
          p: frame.p,
          dP: g.dP,
          dS: g.dS,
          k: inputs.k,
          nk: frame.nk,
          d: inputs.d,
          scale: softmaxScale(problem),
          scaleLater: findDescriptor(algorithm)?.backward?.scaleLater === true,
        })
      : undefined;
  return (
    <section className="view formula" aria-label="Formula">
      <h3>
        Step {frame.step + 1}: <code>{ev.kind}</code> {r1 > r0 ? `· row ${row}` : ''}
      </h3>
      <Tex tex={f.symbolic} label="Update" />
      {f.live && <Tex tex={f.live} label="Update with live numbers" />}
      {extra?.map((t, i) => (
        <Tex key={i} tex={t} label={i === 0 ? 'One entry with live numbers' : 'One entry, continued'} />
      ))}
    </section>
  );
}
