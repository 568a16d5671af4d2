// Whether the first screen is due: only on a bare address (a share link or a ?lesson= URL
// opens straight to its state) and only until the person has dismissed it once.

const KEY = 'flashscope.welcome.v1';

export function welcomeDismissed(): boolean {
  try {
    return window.localStorage.getItem(KEY) === 'dismissed';
  } catch {
    // Storage unavailable (private window): show it, and dismissing it holds for this page only.
    return false;
  }
}

export function rememberWelcomeDismissed(): void {
  try {
    window.localStorage.setItem(KEY, 'dismissed');
  } catch {
    // Not persisted; the page still closes it.
  }
}

/** A bare address: no query (lesson, share state) and no fragment (share state). */
export function welcomeDue(search: string, hash: string, dismissed: boolean): boolean {
  return !dismissed && (search === '' || search === '?') && (hash === '' || hash === '#');
}
