import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { RestoreBoundary } from './share/RestoreBoundary.tsx';
import { applyThemeFromStore } from './shell/theme.ts';
import './styles.css';

applyThemeFromStore();

// The shared link is restored under the boundary, before App's first render, so panes load it
// directly and a link that cannot be opened only brings back the defaults.
createRoot(document.getElementById('root')!).render(
  <RestoreBoundary>
    <App />
  </RestoreBoundary>,
);
