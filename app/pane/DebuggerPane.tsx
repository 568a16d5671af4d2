// One debugger: its own worker session, problem, transport, breakpoints and views. Several
// can be mounted side by side (each with its own pane id).

import { Component, Suspense, useEffect, useRef, useState, type ReactNode } from 'react';
import { formToRequest } from '../store/problem-form.ts';
import { useApp, type PaneId } from '../store/store.ts';
import { BreakpointsPanel } from '../panels/BreakpointsPanel.tsx';
import { ProblemPanel } from '../panels/ProblemPanel.tsx';
import { Transport } from '../panels/Transport.tsx';
import { lowPrecisionRefusal, refusedLoadMessage } from '../defaults/PrecisionFix.tsx';
import { DEFAULT_VIEWS, VIEWS, type ViewColumn } from '../views/registry.ts';
import { PaneContext, usePane } from '../store/pane-context.ts';
import { PaneController } from '../store/pane-controller.ts';
import { registerController } from '../store/controllers.ts';
import { ExportBar, ExportFrame } from '../export/ExportControls.tsx';

/** A view that throws shows its error in its own box; the rest of the pane keeps working. */
class ViewBoundary extends Component<{ title: string; children: ReactNode }, { error: string | null }> {
  override state = { error: null as string | null };
  static getDerivedStateFromError(e: unknown) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
  override render() {
    if (this.state.error)
      return (
        <section className="view" role="alert">
          <p className="error">
            The {this.props.title} view failed: {this.state.error}
          </p>
          <button type="button" onClick={() => this.setState({ error: null })}>
            Retry view
          </button>
        </section>
      );
    return this.props.children;
  }
}

function Views({ column }: { column: ViewColumn }) {
  const { pane } = usePane();
  const shown = useApp((s) => s.layout.views[pane]);
  const summary = useApp((s) => s.playback[pane].summary);
  if (!summary) return null;
  return (
    <>
      {VIEWS.filter((v) => v.column === column && shown?.includes(v.id) && (!v.when || v.when(summary))).map((v) => (
        <ViewBoundary key={v.id} title={v.title}>
          <ExportFrame id={v.id} title={v.title}>
            <Suspense fallback={<section className="view dim">Loading {v.title.toLowerCase()}…</section>}>
              <v.component />
            </Suspense>
          </ExportFrame>
        </ViewBoundary>
      ))}
    </>
  );
}

// A focused radio keeps its arrow keys: they move the choice within its group.
function isTyping(t: EventTarget | null): boolean {
  if (!(t instanceof HTMLElement)) return false;
  const tag = t.tagName;
  return (
    tag === 'TEXTAREA' ||
    tag === 'SELECT' ||
    (tag === 'INPUT' && !['checkbox', 'range', 'button'].includes((t as HTMLInputElement).type)) ||
    t.isContentEditable
  );
}

function useKeyboard(pane: PaneId, ctl: PaneController) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (useApp.getState().layout.activePane !== pane || isTyping(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
      const pb = useApp.getState().playback[pane];
      switch (e.key) {
        case ' ':
          if (e.target instanceof HTMLButtonElement) return; // Space on a focused button presses it
          e.preventDefault();
          if (pb.playing) ctl.pause();
          else ctl.play();
          break;
        case 'ArrowRight':
          e.preventDefault();
          void ctl.step(1, e.shiftKey ? 'inner' : 'phase');
          break;
        case 'ArrowLeft':
          e.preventDefault();
          void ctl.step(-1, e.shiftKey ? 'inner' : 'phase');
          break;
        case 'Home':
          e.preventDefault();
          void ctl.seek(0);
          break;
        case 'End':
          e.preventDefault();
          void ctl.seek(Number.MAX_SAFE_INTEGER);
          break;
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [pane, ctl]);
}

function PaneBody() {
  const { pane, ctl } = usePane();
  const error = useApp((s) => s.playback[pane].error);
  const notice = useApp((s) => s.playback[pane].notice);
  const status = useApp((s) => s.playback[pane].status);
  useKeyboard(pane, ctl);
  return (
    <div className="pane" data-pane={pane}>
      {(error?.place === 'worker' || notice) && (
        <div className={`banner ${error?.place === 'worker' ? 'error' : ''}`} role={error?.place === 'worker' ? 'alert' : 'status'}>
          {error?.place === 'worker' && <span>{error.message} </span>}
          {notice && <span>{notice} </span>}
          <button type="button" onClick={() => ctl.dismissError()}>
            Dismiss
          </button>
        </div>
      )}
      <aside className="left" aria-label="Problem and breakpoints">
        <ProblemPanel />
        <BreakpointsPanel />
      </aside>
      <div className="center">
        <Transport />
        <ExportBar />
        {status === 'empty' ? <p className="dim">Load a problem to start.</p> : <Views column="main" />}
      </div>
      <aside className="right" aria-label="Step details">
        <Views column="side" />
      </aside>
    </div>
  );
}

export interface DebuggerPaneProps {
  pane: PaneId;
  /** false: the owner loads the first problem itself (lessons load a preset, then seek). */
  loadOnMount?: boolean;
  /** Hands the pane's controller to its owner once it exists (and null when it is disposed). */
  onController?: (ctl: PaneController | null) => void;
}

export function DebuggerPane({ pane, loadOnMount = true, onController }: DebuggerPaneProps) {
  const [ctl, setCtl] = useState<PaneController | null>(null);
  // The owner's callback and flag are read once per pane; a new pane id starts over.
  const owner = useRef({ loadOnMount, onController });
  owner.current = { loadOnMount, onController };
  useEffect(() => {
    const { loadOnMount, onController } = owner.current;
    useApp.getState().addPane(pane, DEFAULT_VIEWS);
    const c = new PaneController(pane);
    const unregister = registerController(pane, c);
    setCtl(c);
    onController?.(c);
    // First screen: the pane's current form, loaded right away.
    // A link's low-precision problem the engine would refuse waits for one of the panel's fixes.
    const form = useApp.getState().problem[pane].form;
    if (loadOnMount && lowPrecisionRefusal(form))
      useApp.getState().patchPlayback(pane, { error: { place: 'problem', message: refusedLoadMessage(form) } });
    else if (loadOnMount) void c.load(formToRequest(form));
    return () => {
      unregister();
      onController?.(null);
      c.dispose();
    };
  }, [pane]);
  if (!ctl) return null;
  return (
    <PaneContext.Provider value={{ pane, ctl }}>
      <PaneBody />
    </PaneContext.Provider>
  );
}
