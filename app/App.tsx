import { lazy, Suspense, useEffect } from 'react';
import { DebuggerPane } from './pane/DebuggerPane.tsx';
import { useApp } from './store/store.ts';
import { LessonsNav, WithLessons } from './lessons/LessonsEntry.tsx';

const WebGpuPanel = lazy(() => import('./webgpu/WebGpuPanel.tsx'));

export function App() {
  const theme = useApp((s) => s.layout.theme);
  const setTheme = useApp((s) => s.setTheme);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  const other = theme === 'dark' ? 'light' : 'dark';
  return (
    <div className="app">
      <header className="topbar">
        <h1>
          Flash<span>Scope</span>
        </h1>
        <span className="tagline">step through tiled attention, one phase at a time</span>
        <LessonsNav />
        <button className="theme" onClick={() => setTheme(other)} aria-label={`Switch to ${other} theme`}>
          {theme === 'dark' ? '☀' : '☾'}
        </button>
      </header>
      <WithLessons>
        <DebuggerPane pane="main" />
        <Suspense fallback={null}>
          <WebGpuPanel />
        </Suspense>
      </WithLessons>
    </div>
  );
}
