// "Debugger | Compare" in the top bar. Switching hands the keyboard to the mode shown.
import './compare.css';

import { useApp } from '../store/store.ts';
import { useCompare, type AppMode } from './compare-store.ts';
import { comparePaneId } from './pane-config.ts';

export function ModeSwitch() {
  const mode = useCompare((s) => s.mode);
  const set = (m: AppMode) => {
    useCompare.getState().setMode(m);
    useApp.setState((s) => ({ layout: { ...s.layout, activePane: m === 'compare' ? comparePaneId(0) : 'main' } }));
  };
  return (
    <div className="mode-switch" role="tablist" aria-label="Mode">
      {(['debugger', 'compare'] as const).map((m) => (
        <button key={m} type="button" role="tab" aria-selected={mode === m} className={mode === m ? 'on' : undefined} onClick={() => set(m)}>
          {m === 'debugger' ? 'Debugger' : 'Compare'}
        </button>
      ))}
    </div>
  );
}
