// Which compare panes visit K/V blocks last to first. Synced by K/V block, a follower goes to
// its step on the leader's key block; when one pane walks the blocks backwards (FA3, as its
// kernel does, the reverseKv switch) and another forwards (sage, FA2), that step can lie at
// the other end of its trace. This is right for the axis but looks like a pane running away,
// so the compare bar says why and how to line the orders up.

import type { ComparePaneConfig } from './pane-config.ts';
import { paneSwitchSpecs } from './pane-config.ts';

/** Whether the pane's forward visits K/V blocks last to first: its reverseKv switch, or the algorithm's default for it. */
export function visitsKvBackwards(c: ComparePaneConfig): boolean {
  const spec = paneSwitchSpecs(c.algorithm).reverseKv;
  if (!spec) return false;
  return (c.features.reverseKv ?? spec.default) === true;
}

const list = (xs: number[]) =>
  xs.length === 1
    ? `Pane ${xs[0] + 1}`
    : `Panes ${xs
        .slice(0, -1)
        .map((i) => i + 1)
        .join(', ')} and ${xs[xs.length - 1] + 1}`;

/** The note for mixed K/V orders on the forward pass, or undefined when all panes walk the blocks the same way. */
export function kvOrderNote(panes: readonly ComparePaneConfig[]): string | undefined {
  const back = panes.flatMap((c, i) => (visitsKvBackwards(c) ? [i] : []));
  if (back.length === 0 || back.length === panes.length) return undefined;
  return `${list(back)} ${back.length === 1 ? 'visits' : 'visit'} K/V blocks last to first, as FA3's kernel does; the others go first to last. Synced by K/V block, each pane goes to its step on the same key block, which can lie at the other end of its run. Turn reverseKv off in ${back.length === 1 ? 'that pane' : 'those panes'} to step all panes in the same order.`;
}
