// The configuration upstream flash-attention picks for this problem and the decisions that
// pick it, each with the upstream file and line that makes it (the same list `describe` prints).

import type { HwView } from '../../engine/api.ts';

type Upstream = NonNullable<HwView['resources']['upstream']>;

/** "file@commit l. 12-14[, other@commit l. 3]: decision" → the decision and where upstream makes it. */
export function splitDecision(line: string): { decision: string; source: string | null } {
  const at = line.indexOf(': ');
  const head = at < 0 ? line : line.slice(0, at);
  if (!/@[0-9a-f]{7,40}\b/.test(head)) return { decision: line, source: null };
  return { decision: at < 0 ? '' : line.slice(at + 2), source: head };
}

/** "block m 128 · pack gqa true · …" */
export function UpstreamConfig({ config }: { config: Upstream['config'] }) {
  return (
    <p className="hw-upstream-config">
      {Object.entries(config).map(([k, v], i) => (
        <span key={k}>
          {i > 0 && ' · '}
          {k.replace(/_/g, ' ')} <b>{String(v)}</b>
        </span>
      ))}
    </p>
  );
}

function WhyList({ why }: { why: string[] }) {
  return (
    <ol className="hw-upstream-why">
      {why.map((line) => {
        const { decision, source } = splitDecision(line);
        return (
          <li key={line}>
            {decision}
            {source && (
              <>
                {decision && ' '}
                <code className="dim">{source}</code>
              </>
            )}
          </li>
        );
      })}
    </ol>
  );
}

const whySummary = (up: Upstream) => `Why this configuration: ${up.why.length} decisions of upstream's dispatch, with their source lines`;

/** The configuration in view, its decisions folded below it. */
export function UpstreamDecisions({ upstream }: { upstream: Upstream }) {
  return (
    <>
      <UpstreamConfig config={upstream.config} />
      <details className="hw-upstream">
        <summary>{whySummary(upstream)}</summary>
        <WhyList why={upstream.why} />
      </details>
    </>
  );
}

export function UpstreamChoice({ view }: { view: HwView }) {
  const up = view.resources.upstream;
  if (!up) return null;
  return (
    <details className="hw-upstream" data-testid="hw-upstream">
      <summary>{whySummary(up)}</summary>
      <UpstreamConfig config={up.config} />
      <WhyList why={up.why} />
    </details>
  );
}
