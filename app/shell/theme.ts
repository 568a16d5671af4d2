// Puts the store's theme on <html> inside the store update itself, so views that read theme
// colours from computed style in their own effects already see the new theme.

import { useApp } from '../store/store.ts';

export function applyThemeFromStore(): () => void {
  const root = document.documentElement;
  root.dataset.theme = useApp.getState().layout.theme;
  return useApp.subscribe((s) => {
    if (root.dataset.theme !== s.layout.theme) root.dataset.theme = s.layout.theme;
  });
}
