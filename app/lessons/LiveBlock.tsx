// A paragraph of a chapter whose numbers the engine computes: the lesson worker runs the
// block's computation (a few engine runs) and the page shows the text and table it returns.

import { useEffect, useState } from 'react';
import type { LiveContent } from '../../content/lessons/chapters/types.ts';
import { lessonCall } from './lesson-client.ts';
import { Inline } from './RichText.tsx';

export function LiveBlock({ chapter, block, label }: { chapter: number; block: number; label: string }) {
  const [content, setContent] = useState<LiveContent | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    lessonCall((api) => api.live(chapter, block)).then(
      (c) => live && setContent(c),
      (e: unknown) => live && setError(`Could not compute ${label}: ${e instanceof Error ? e.message : String(e)}`),
    );
    return () => {
      live = false;
    };
  }, [chapter, block, label]);
  if (error) return <p className="error">{error}</p>;
  if (!content)
    return (
      <p className="dim live-pending" role="status">
        The engine is computing {label}…
      </p>
    );
  return (
    <fieldset className="live-block bare" data-testid={`live-${block}`} aria-label={label}>
      <p>
        <Inline text={content.text} />
      </p>
      {content.table && (
        <table className="num-table live-table">
          <thead>
            <tr>
              {content.table.head.map((h, i) => (
                <th key={i} scope="col">
                  {h || <span className="sr-only">row</span>}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {content.table.rows.map((r, i) => (
              <tr key={i}>
                {r.map((c, j) =>
                  j === 0 ? (
                    <th key={j} scope="row">
                      {c}
                    </th>
                  ) : (
                    <td key={j}>{c}</td>
                  ),
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p className="live-source dim">Computed by the engine for this page.</p>
    </fieldset>
  );
}
