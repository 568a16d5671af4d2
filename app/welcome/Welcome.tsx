// The first screen on a bare address: what FlashScope is and three ways in (learn, debug,
// compare). A modal dialog over the debugger, so Escape or any way in leaves the app as it was.

import { useEffect, useRef, useState } from 'react';
import { goToLesson } from '../lessons/route.ts';
import { openMode } from '../shell/ModeSwitch.tsx';
import { rememberWelcomeDismissed, welcomeDismissed, welcomeDue } from './welcome-memory.ts';
import './welcome.css';

export function Welcome() {
  const [open, setOpen] = useState(() => welcomeDue(window.location.search, window.location.hash, welcomeDismissed()));
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = dialog.current;
    if (open && d && !d.open) d.showModal();
  }, [open]);
  if (!open) return null;
  const leave = (then: () => void) => {
    rememberWelcomeDismissed();
    dialog.current?.close();
    setOpen(false);
    then();
  };
  return (
    <dialog
      ref={dialog}
      className="welcome"
      aria-labelledby="welcome-title"
      data-testid="welcome"
      onClose={() => leave(() => undefined)}
      // The debugger's keys stay with the debugger only once the dialog is gone.
      onKeyDown={(e) => {
        if (e.key !== 'Escape' && e.key !== 'Tab' && e.key !== 'Enter' && e.key !== ' ') e.nativeEvent.stopPropagation();
      }}
    >
      <h2 id="welcome-title">
        Welcome to Flash<span>Scope</span>
      </h2>
      <p>
        FlashScope shows how attention is computed one tile at a time: the scores S = QKᵀ, the running row max m and sum ℓ that let
        FlashAttention skip writing S to memory, and what each kernel — standard attention, FA1 to FA4, flash-decoding — loads, computes and
        writes at every step. Everything runs in your browser.
      </p>
      <div className="ways">
        <button type="button" className="way primary" onClick={() => leave(() => goToLesson({ lesson: 1, step: null }))}>
          <strong>Learn</strong>
          <span>Start with chapter 1: standard attention and why it moves so many bytes.</span>
        </button>
        <button type="button" className="way" onClick={() => leave(() => openMode('debugger', false))}>
          <strong>Debug</strong>
          <span>Step through FlashAttention-2 on a small problem, phase by phase.</span>
        </button>
        <button type="button" className="way" onClick={() => leave(() => openMode('compare', false))}>
          <strong>Compare</strong>
          <span>Run two kernels side by side on the same inputs and see what differs.</span>
        </button>
      </div>
      <p className="keys">
        Keyboard: <kbd>→</kbd> / <kbd>←</kbd> step, <kbd>Space</kbd> plays, <kbd>?</kbd> lists every shortcut, <kbd>Esc</kbd> closes this.
        It will not open again; the top bar's Lessons, Single and Compare lead to the same places.
      </p>
    </dialog>
  );
}
