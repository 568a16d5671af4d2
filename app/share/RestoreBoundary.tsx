// The app under an error boundary that owns restoring the shared link: whatever a link (or a
// later render) throws, the page comes back with the defaults and a notice, and the fragment
// is cleared so a reload does not meet the same failure.

import { Component, type ReactNode } from 'react';
import { restoreDefaults, restoreFromUrl } from './url-sync.ts';

let restored = false;

/** Puts the link's state into the stores before anything below it renders. */
function Restore({ children }: { children: ReactNode }) {
  if (!restored) {
    restored = true;
    restoreFromUrl(location.hash);
  }
  return children;
}

interface BoundaryState {
  /** How many times the app fell back to the defaults. */
  resets: number;
  failed?: string;
}

/** Falls back to the defaults once; if the defaults fail too, says so instead of a blank page. */
export class RestoreBoundary extends Component<{ children: ReactNode }, BoundaryState> {
  override state: BoundaryState = { resets: 0 };

  static getDerivedStateFromError(e: unknown): Partial<BoundaryState> {
    return { failed: e instanceof Error ? e.message : String(e) };
  }

  override componentDidCatch(e: unknown): void {
    if (this.state.resets > 0) return;
    const why = e instanceof Error ? e.message : String(e);
    restoreDefaults(why, location.hash !== '');
    this.setState({ resets: 1, failed: undefined });
  }

  override render() {
    const { resets, failed } = this.state;
    if (failed !== undefined && resets > 0)
      return (
        <div className="banner share-notice" role="alert">
          <strong>FlashScope could not start:</strong> {failed}. Reload the page to try again.
        </div>
      );
    if (failed !== undefined) return null;
    return <Restore key={resets}>{this.props.children}</Restore>;
  }
}
