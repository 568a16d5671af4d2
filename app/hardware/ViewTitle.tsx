// A hardware view's title with a fold button: a folded view keeps only this line and does
// no work while the debugger steps (the pane has many views; the memory map and timeline
// are the heaviest).

import { hwState, useHw, useHwPane } from '../store/hw-store.ts';

export function useFolded(pane: string, id: string): boolean {
  return useHwPane(pane, (s) => Boolean(s.collapsed[id]));
}

export function ViewTitle({ pane, id, title }: { pane: string; id: string; title: string }) {
  const folded = useFolded(pane, id);
  return (
    <h3 className="hw-title">
      <button
        type="button"
        className="hw-fold"
        aria-expanded={!folded}
        aria-label={`${folded ? 'Show' : 'Hide'} ${title.toLowerCase()}`}
        onClick={() => useHw.getState().patch(pane, { collapsed: { ...hwState(pane).collapsed, [id]: !folded } })}
      >
        {folded ? '▸' : '▾'}
      </button>{' '}
      {title}
    </h3>
  );
}
