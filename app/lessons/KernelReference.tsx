// The per-kernel reference the algorithm notes already hold (content/lessons/, one file per
// kernel): its switches and what it supports, folded under a chapter that teaches it.

import { hwLessonFor } from '../../content/lessons/index.ts';
import { Inline } from './RichText.tsx';

export function KernelReference({ ids }: { ids: string[] }) {
  const lessons = ids.map(hwLessonFor).filter((l) => l !== undefined);
  if (lessons.length === 0) return null;
  return (
    <section className="widget kernel-ref" aria-label="Kernel reference">
      <h3>Reference</h3>
      {lessons.map((l) => (
        <details key={l.id}>
          <summary>
            {l.title}: switches and support <span className="dim">· {l.hardware}</span>
          </summary>
          {l.features.length > 0 && (
            <table className="num-table ref-table">
              <thead>
                <tr>
                  <th>switch</th>
                  <th>default</th>
                  <th>what it does</th>
                </tr>
              </thead>
              <tbody>
                {l.features.map((f) => (
                  <tr key={f.key}>
                    <td>
                      <code>{f.key}</code>
                    </td>
                    <td>{f.default}</td>
                    <td className="text">
                      <Inline text={f.text} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <table className="num-table ref-table">
            <thead>
              <tr>
                <th>variant</th>
                <th>kernel</th>
                <th>FlashScope</th>
                <th>note</th>
              </tr>
            </thead>
            <tbody>
              {l.support.map((s) => (
                <tr key={s.variant}>
                  <td className="text">{s.variant}</td>
                  <td>{s.kernel}</td>
                  <td>{s.flashscope}</td>
                  <td className="text">
                    <Inline text={s.note} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="hint">Sources: {l.sources}</p>
        </details>
      ))}
    </section>
  );
}
