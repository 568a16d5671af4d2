// "Share link" in the top bar, and the notice listing what a shared link could not restore.

import { useState } from 'react';
import { useImport } from '../import/import-store.ts';
import { useShare } from './share-store.ts';
import { currentLink } from './url-sync.ts';

export function ShareButton() {
  const [link, setLink] = useState<string | null>(null);
  const [copied, setCopied] = useState<boolean | null>(null);
  const imported = useImport((s) => !!s.imported.main);
  return (
    <div className="share">
      <button
        type="button"
        onClick={() => {
          const url = currentLink();
          history.replaceState(history.state, '', url);
          setLink(url);
          setCopied(null);
          navigator.clipboard?.writeText(url).then(
            () => setCopied(true),
            () => setCopied(false),
          );
        }}
      >
        Share link
      </button>
      {link && (
        <div className="share-pop" role="dialog" aria-label="Share link">
          <input aria-label="Link to this view" readOnly value={link} size={40} onFocus={(e) => e.target.select()} />
          <span className="dim">{copied === true ? 'Copied.' : copied === false ? 'Select the link and copy it.' : ''}</span>
          {imported && (
            <p className="dim">Tensors loaded from files are not in the link; it opens with random inputs of the same shapes.</p>
          )}
          <button type="button" onClick={() => setLink(null)}>
            Close
          </button>
        </div>
      )}
    </div>
  );
}

export function ShareNotice() {
  const notices = useShare((s) => s.notices);
  const dismiss = useShare((s) => s.dismiss);
  if (notices.length === 0) return null;
  return (
    <div className="banner share-notice" role="status" data-testid="share-notice">
      <strong>Parts of this link were ignored:</strong>
      <ul>
        {notices.map((n, i) => (
          <li key={i}>{n}</li>
        ))}
      </ul>
      <button type="button" onClick={dismiss}>
        Dismiss
      </button>
    </div>
  );
}
