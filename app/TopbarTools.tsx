// The top bar's tools (share link, shortcuts, theme). On a phone they fold behind one "More"
// button so the section tabs keep a single row; wider screens show them inline.
import { useEffect, useRef, useState } from 'react';
import { ShareButton } from './share/ShareControls.tsx';
import { ShortcutsHelp } from './help/ShortcutsHelp.tsx';
import { useApp } from './store/store.ts';

export function TopbarTools() {
  const theme = useApp((s) => s.layout.theme);
  const setTheme = useApp((s) => s.setTheme);
  const [open, setOpen] = useState(false);
  const other = theme === 'dark' ? 'light' : 'dark';
  const more = useRef<HTMLButtonElement>(null);
  // Escape folds the open menu and gives the focus back to its button.
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      setOpen(false);
      more.current?.focus();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);
  return (
    <div className="topbar-tools">
      <button
        ref={more}
        type="button"
        className="topbar-more"
        aria-expanded={open}
        aria-controls="topbar-tool-list"
        aria-label="More tools: share, shortcuts, theme"
        onClick={() => setOpen(!open)}
      >
        ⋯
      </button>
      <div id="topbar-tool-list" className="topbar-tool-list" data-open={open || undefined}>
        <ShareButton />
        <ShortcutsHelp />
        <button type="button" className="theme" onClick={() => setTheme(other)} aria-label={`Switch to ${other} theme`}>
          {theme === 'dark' ? '☀' : '☾'}
        </button>
      </div>
    </div>
  );
}
