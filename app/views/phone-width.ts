// Whether the window is phone-wide (the stylesheet's one-column breakpoint), for views that size canvases in script.

import { useSyncExternalStore } from 'react';

const PHONE = '(max-width: 720px)';

function subscribe(onChange: () => void): () => void {
  const query = window.matchMedia(PHONE);
  query.addEventListener('change', onChange);
  return () => query.removeEventListener('change', onChange);
}

export function usePhoneWidth(): boolean {
  return useSyncExternalStore(subscribe, () => window.matchMedia(PHONE).matches);
}
