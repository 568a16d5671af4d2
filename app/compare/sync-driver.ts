// Synchronised stepping. When the person moves one compare pane (buttons, keys, scrubber,
// breakpoints), that pane leads: its position on the chosen axis is read from its worker
// and every other pane seeks to its own step at that point in its own worker. Moves made
// by the driver itself are not taken as a new lead, so panes never chase each other.

import type { SyncAxis } from '../../engine/api.ts';
import { useApp } from '../store/store.ts';
import { controllers } from '../store/controllers.ts';
import { useCompare } from './compare-store.ts';
import { comparePaneId } from './pane-config.ts';
import { paneLabel } from './pane-label.ts';
import { paneRefusal } from './pane-dtype.ts';
import { SHARED_PANE } from './shared-request.ts';

/** While > 0 (restoring a shared link's positions), pane moves are not propagated. */
let paused = 0;
export async function withSyncPaused<T>(fn: () => Promise<T>): Promise<T> {
  paused++;
  try {
    return await fn();
  } finally {
    paused--;
  }
}

const AXIS_NAME: Record<SyncAxis, string> = { kv: 'K/V block', progress: 'normalised progress', time: 'simulated time', none: 'unlinked' };

export function startSyncDriver(): () => void {
  const moving = new Set<string>();
  const last = new Map<string, number | undefined>();
  const lastSummary = new Map<string, unknown>();
  let running = false;
  /** The pane the person moved last: a pane that loads a new run joins it. */
  let lastLeader = -1;
  let again: number | null = null;

  const propagate = async (leader: number): Promise<void> => {
    if (running) {
      again = leader;
      return;
    }
    running = true;
    try {
      for (let lead: number | null = leader; lead !== null; ) {
        again = null;
        const { axis, gpu, panes } = useCompare.getState();
        const shared = useApp.getState().problem[SHARED_PANE]?.applied;
        const lc = controllers.get(comparePaneId(lead));
        if (!lc || axis === 'none') break;
        const point = await lc.api.syncPoint(gpu);
        const fellBack: string[] = [];
        if (axis === 'time' && point.timeUs === null)
          fellBack.push(`${paneLabel(panes[lead], lead, shared)} (the leader) has no hardware schedule on this GPU`);
        await Promise.all(
          panes.map(async (cfg, i) => {
            const id = comparePaneId(i);
            const c = controllers.get(id);
            // A pane refused for its dtype (pane-dtype.ts) shows no run; its worker's previous one is not followed.
            if (
              i === lead ||
              !c ||
              useApp.getState().playback[id]?.status !== 'ready' ||
              paneRefusal(cfg, useApp.getState().problem[SHARED_PANE]?.applied)
            )
              return;
            moving.add(id);
            try {
              let used: SyncAxis = axis;
              await c.moveWith((api) =>
                api.seekSync(point, axis, gpu).then((r) => {
                  used = r.used;
                  return r.frame;
                }),
              );
              if (used !== axis && point.timeUs !== null)
                fellBack.push(
                  `${paneLabel(cfg, i, shared)} has no ${axis === 'kv' ? 'step on that K/V block' : 'hardware schedule on this GPU'}`,
                );
              last.set(id, useApp.getState().playback[id]?.frame?.step);
            } finally {
              moving.delete(id);
            }
          }),
        );
        useCompare.setState({
          syncNotice: fellBack.length
            ? `Synced by ${AXIS_NAME.progress} instead of ${AXIS_NAME[axis]} where needed: ${fellBack.join('; ')}.`
            : undefined,
        });
        lead = again;
      }
    } finally {
      running = false;
    }
  };

  /** Panes whose run changed and whose first frame of the new run has not been seen yet. */
  const awaitingFirst = new Set<string>();
  const lastFrame = new Map<string, unknown>();
  return useApp.subscribe((s) => {
    const { mode, panes, axis } = useCompare.getState();
    if (mode !== 'compare') return;
    let leader = -1;
    let rejoin = false;
    panes.forEach((_, i) => {
      const id = comparePaneId(i);
      const pb = s.playback[id];
      if (pb?.summary !== lastSummary.get(id)) {
        lastSummary.set(id, pb?.summary);
        awaitingFirst.add(id);
      }
      const frame = pb?.frame;
      if (frame === lastFrame.get(id)) return;
      lastFrame.set(id, frame);
      const step = frame?.step;
      const prev = last.get(id);
      last.set(id, step);
      // A new run's first frame is not a move by the person; neither is a move the driver made.
      if (awaitingFirst.has(id) && pb?.status === 'ready') {
        awaitingFirst.delete(id);
        if (lastLeader >= 0 && lastLeader !== i && lastLeader < panes.length && !paused) rejoin = true;
        return;
      }
      if (!paused && !moving.has(id) && step !== undefined && step !== prev && pb?.status === 'ready') leader = i;
    });
    if (leader >= 0) lastLeader = leader;
    if (axis === 'none') return;
    if (leader >= 0) void propagate(leader);
    else if (rejoin) void propagate(lastLeader);
  });
}
