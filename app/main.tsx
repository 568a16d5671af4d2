import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { restoreFromUrl } from './share/url-sync.ts';
import './styles.css';

// A shared link's state goes into the stores before the first render, so panes load it directly.
restoreFromUrl(location.hash);

createRoot(document.getElementById('root')!).render(<App />);
