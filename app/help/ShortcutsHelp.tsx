// The keyboard shortcuts, in a dialog that `?` opens anywhere outside a text field (and the
// top bar's "?" button). Escape or Close shuts it and focus goes back where it was.

import { useEffect, useRef, useState } from 'react';
import './help.css';

const GROUPS: { title: string; keys: [string, string][] }[] = [
  {
    title: 'Transport (debugger, compare, lessons)',
    keys: [
      ['Space', 'play / pause'],
      ['→', 'step forward one phase'],
      ['←', 'step back one phase'],
      ['Shift + →', 'next inner iteration'],
      ['Shift + ←', 'previous inner iteration'],
      ['Home', 'first step'],
      ['End', 'last step'],
    ],
  },
  {
    title: 'Serving page',
    keys: [
      ['← / →', 'previous / next step'],
      ['Home / End', 'first / last step'],
    ],
  },
  {
    title: 'Heatmaps (Tab to one)',
    keys: [
      ['Arrow keys', 'move by a tile and read its numbers'],
      ['Shift + arrow keys', 'move by one cell'],
      ['Enter', 'select the tile'],
    ],
  },
  {
    title: 'Warp-role timeline (Tab to it)',
    keys: [
      ['← / →', 'previous / next op, read aloud'],
      ['Enter', "seek the debugger to the op's step"],
      ['+ / − / 0', 'zoom in / out / fit'],
      ['Shift + ← / →', 'pan'],
    ],
  },
  {
    title: 'Choices',
    keys: [
      ['← / → on Forward | Backward', 'switch pass'],
      ['?', 'this help'],
      ['Escape', 'close a dialog'],
    ],
  },
];

function typing(t: EventTarget | null): boolean {
  if (!(t instanceof HTMLElement)) return false;
  return (
    t.tagName === 'TEXTAREA' ||
    t.tagName === 'SELECT' ||
    (t.tagName === 'INPUT' && !['checkbox', 'radio', 'range', 'button'].includes((t as HTMLInputElement).type)) ||
    t.isContentEditable
  );
}

export function ShortcutsHelp() {
  const [open, setOpen] = useState(false);
  const dialog = useRef<HTMLDialogElement>(null);
  const returnTo = useRef<HTMLElement | null>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== '?' || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      e.preventDefault();
      setOpen(true);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (open && !d.open) {
      returnTo.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
      d.showModal();
    } else if (!open && d.open) d.close();
  }, [open]);
  const onClose = () => {
    setOpen(false);
    returnTo.current?.focus();
    returnTo.current = null;
  };
  return (
    <>
      <button
        type="button"
        className="help-button"
        aria-label="Keyboard shortcuts"
        title="Keyboard shortcuts (?)"
        onClick={() => setOpen(true)}
      >
        ?
      </button>
      <dialog ref={dialog} className="help-dialog" aria-labelledby="help-title" onClose={onClose}>
        <h2 id="help-title">Keyboard shortcuts</h2>
        <p className="dim">Tab moves through every control; the focused one has an outline.</p>
        {GROUPS.map((g) => (
          <section key={g.title} aria-label={g.title}>
            <h3>{g.title}</h3>
            <dl>
              {g.keys.map(([k, what]) => (
                <div key={k}>
                  <dt>
                    <kbd>{k}</kbd>
                  </dt>
                  <dd>{what}</dd>
                </div>
              ))}
            </dl>
          </section>
        ))}
        <form method="dialog">
          <button type="submit" className="primary">
            Close
          </button>
        </form>
      </dialog>
    </>
  );
}
