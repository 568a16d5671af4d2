// What the difference table and the output difference show, from each pane's outcome: the
// panes that ran side by side, a wait while some still load, or, when no pane could run the
// problem, which pane refused it and why. A pane that refused never gets a result, so waiting
// on it would never end.

/** One compare pane as the summaries see it. `refusal`: why it is not run (its dtype, or its load failed). */
export interface PaneOutcome {
  /** Its algorithm, named next to its number. */
  algorithm: string;
  refusal?: string;
  /** Its whole-run result has arrived. */
  ready: boolean;
}

export type DiffState =
  | { kind: 'table'; shown: number[]; notRun?: string }
  | { kind: 'waiting'; notRun?: string }
  | { kind: 'none'; message: string };

/** "pane 1 (fa1): why; pane 2 (fa2): why" for the given panes. */
function refusals(panes: PaneOutcome[], which: number[]): string {
  return which.map((i) => `pane ${i + 1} (${panes[i].algorithm}): ${panes[i].refusal!.replace(/\.$/, '')}`).join('; ');
}

export function diffState(panes: PaneOutcome[]): DiffState {
  const refused = panes.map((_, i) => i).filter((i) => panes[i].refusal);
  const running = panes.map((_, i) => i).filter((i) => !panes[i].refusal);
  if (running.length === 0) return { kind: 'none', message: `No pane could run this problem: ${refusals(panes, refused)}.` };
  const notRun = refused.length ? `Not in the table: ${refusals(panes, refused)}.` : undefined;
  if (running.every((i) => panes[i].ready)) return { kind: 'table', shown: running, notRun };
  return { kind: 'waiting', notRun };
}

/** The output difference of panes a and b: both ready, one waits, or the refused ones named. */
export function pairState(
  panes: PaneOutcome[],
  a: number,
  b: number,
): { kind: 'ready' | 'waiting' } | { kind: 'refused'; message: string } {
  const refused = [a, b].filter((i) => panes[i]?.refusal);
  if (refused.length) return { kind: 'refused', message: `Not run: ${refusals(panes, refused)}. Pick another pair or change the pane.` };
  return [a, b].every((i) => panes[i]?.ready) ? { kind: 'ready' } : { kind: 'waiting' };
}
