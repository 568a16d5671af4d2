import { lazy, Suspense, useEffect } from 'react';
import { DebuggerPane } from './pane/DebuggerPane.tsx';
import { WithLessons } from './lessons/LessonsEntry.tsx';
import { LessonsNav } from './shell/LessonsNav.tsx';
import { ModeSwitch } from './shell/ModeSwitch.tsx';
import { useCompare } from './compare/compare-store.ts';
import { ShareNotice } from './share/ShareControls.tsx';
import { startUrlSync } from './share/url-sync.ts';
import { useServing } from './serving/serving-store.ts';
import { TopbarTools } from './TopbarTools.tsx';
import { Welcome } from './welcome/Welcome.tsx';

const WebGpuPanel = lazy(() => import('./webgpu/WebGpuPanel.tsx'));
const ComparePage = lazy(() => import('./compare/ComparePage.tsx').then((m) => ({ default: m.ComparePage })));
const ServingPage = lazy(() => import('./serving/ServingPage.tsx').then((m) => ({ default: m.ServingPage })));

export function App() {
  const mode = useCompare((s) => s.mode);
  const serving = useServing((s) => s.open);
  useEffect(() => startUrlSync(), []);
  return (
    <div className="app">
      <header className="topbar">
        <h1>
          Flash<span>Scope</span>
        </h1>
        <span className="tagline">step through tiled attention, one phase at a time</span>
        <LessonsNav />
        <ModeSwitch />
        <TopbarTools />
      </header>
      <main>
        <ShareNotice />
        <WithLessons>
          {/* The debugger pane stays mounted in compare mode: it holds the shared problem. */}
          <div hidden={mode === 'compare' || serving} className="mode-debugger">
            <DebuggerPane pane="main" />
            <Suspense fallback={null}>
              <WebGpuPanel />
            </Suspense>
          </div>
          {mode === 'compare' && !serving && (
            <Suspense fallback={<p className="dim">Loading compare mode…</p>}>
              <ComparePage />
            </Suspense>
          )}
          {serving && (
            <Suspense fallback={<p className="dim">Loading serving layouts…</p>}>
              <ServingPage />
            </Suspense>
          )}
        </WithLessons>
      </main>
      <Welcome />
    </div>
  );
}
