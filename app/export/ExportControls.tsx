// Export buttons: per view (PNG, SVG) and per pane (counters as CSV, the trace as JSONL).

import { useRef, useState, type ReactNode } from 'react';
import { countersCsv } from '../../engine/api.ts';
import { usePane } from '../store/pane-context.ts';
import { useApp } from '../store/store.ts';
import { downloadBlob, downloadText, slug } from './download.ts';
import { svgToPng, viewToSvg } from './view-image.ts';
import './export.css';

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

function useBaseName(): string {
  const { pane } = usePane();
  const algorithm = useApp((s) => s.playback[pane].summary?.algorithm ?? 'run');
  const step = useApp((s) => s.playback[pane].frame?.step ?? 0);
  return `flashscope-${slug(algorithm)}-step${step + 1}`;
}

/** Wraps one view with PNG and SVG buttons that save exactly what the view shows. */
export function ExportFrame({ id, title, children }: { id: string; title: string; children: ReactNode }) {
  const box = useRef<HTMLDivElement>(null);
  const base = useBaseName();
  const [error, setError] = useState<string | null>(null);
  const target = () => (box.current?.querySelector('.view') as HTMLElement | null) ?? box.current;
  const save = async (kind: 'png' | 'svg') => {
    setError(null);
    const el = target();
    if (!el) return;
    try {
      const { svg, width, height } = viewToSvg(el);
      const name = `${base}-${slug(id)}.${kind}`;
      if (kind === 'svg') downloadText(name, svg, 'image/svg+xml');
      else downloadBlob(name, await svgToPng(svg, width, height));
    } catch (e) {
      setError(`Exporting ${title} failed: ${message(e)}`);
    }
  };
  return (
    <div className="export-frame" ref={box} data-view={id}>
      <div className="export-tools" data-export-skip>
        <button type="button" aria-label={`Export ${title} as PNG`} onClick={() => void save('png')}>
          PNG
        </button>
        <button type="button" aria-label={`Export ${title} as SVG`} onClick={() => void save('svg')}>
          SVG
        </button>
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {children}
    </div>
  );
}

/** Counters at the current step as CSV, and the whole trace as JSONL. */
export function ExportBar() {
  const { pane, ctl } = usePane();
  const base = useBaseName();
  const ready = useApp((s) => s.playback[pane].status === 'ready' && !!s.playback[pane].frame);
  const [error, setError] = useState<string | null>(null);
  return (
    <fieldset className="export-bar bare" aria-label="Export">
      <span className="dim">Export:</span>
      <button
        type="button"
        disabled={!ready}
        onClick={() => {
          const f = useApp.getState().playback[pane].frame;
          if (f) downloadText(`${base}-counters.csv`, countersCsv(f.counters), 'text/csv');
        }}
      >
        Counters CSV
      </button>
      <button
        type="button"
        disabled={!ready}
        onClick={() => {
          setError(null);
          ctl.api
            .traceJsonl()
            .then((t) => downloadText(`${base.replace(/-step\d+$/, '')}-trace.jsonl`, t, 'application/x-ndjson'))
            .catch((e: unknown) => setError(`Exporting the trace failed: ${message(e)}`));
        }}
      >
        Trace JSONL
      </button>
      {error && (
        <span className="error" role="alert">
          {error}
        </span>
      )}
    </fieldset>
  );
}
