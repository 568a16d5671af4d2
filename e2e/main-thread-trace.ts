// The page's main-thread tasks from Chromium's own trace: each task's wall time and the CPU time
// its thread spent in it. On a shared machine a task's wall time includes waiting for a core;
// its CPU time is the part the page's own work decides.

import type { Page } from '@playwright/test';

/** One main-thread task, on the page's clock (performance.now(), ms). */
export interface MainTask {
  start: number;
  wall: number;
  cpu: number;
}

interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  tdur?: number;
}

/** The user-timing mark that ties the trace's clock to the page's. */
const SYNC_MARK = 'flashscope-trace-sync';

/** The page's main-thread tasks from `since` on, and the page time the trace holds every task ended by. */
export interface MainThreadTrace {
  tasks: MainTask[];
  until: number;
}

/**
 * Starts tracing every task of the browser ('toplevel': one event per task, with its thread
 * time); `stop` ends it. A task still running when the trace ends is not in it: hence `until`.
 */
export async function traceMainThread(page: Page): Promise<{ stop: (since: number) => Promise<MainThreadTrace> }> {
  const cdp = await page.context().newCDPSession(page);
  const events: TraceEvent[] = [];
  cdp.on('Tracing.dataCollected', (d) => events.push(...(d.value as unknown as TraceEvent[])));
  const complete = new Promise<void>((resolve) => cdp.once('Tracing.tracingComplete', () => resolve()));
  await cdp.send('Tracing.start', {
    transferMode: 'ReportEvents',
    traceConfig: { includedCategories: ['toplevel', 'blink.user_timing'], recordMode: 'recordAsMuchAsPossible' },
  });
  return {
    stop: async (since) => {
      const markedAt = await page.evaluate((name) => performance.mark(name).startTime, SYNC_MARK);
      await cdp.send('Tracing.end');
      await complete;
      await cdp.detach();
      const mark = events.find((e) => e.name === SYNC_MARK);
      if (!mark) throw new Error(`the trace holds no ${SYNC_MARK} mark`);
      // The mark is written on the page's main thread: its process and thread name the tasks to keep.
      const offset = mark.ts / 1000 - markedAt;
      const tasks = events
        .filter((e) => e.ph === 'X' && e.name === 'ThreadControllerImpl::RunTask' && e.pid === mark.pid && e.tid === mark.tid)
        .map((e) => ({ start: e.ts / 1000 - offset, wall: (e.dur ?? 0) / 1000, cpu: (e.tdur ?? 0) / 1000 }))
        .filter((t) => t.start >= since);
      return { tasks, until: markedAt };
    },
  };
}

/**
 * The CPU time of what a long-task entry reports: the traced tasks that began within it (one,
 * unless the trace split it), summed, so a task the trace split is never counted as shorter.
 */
export function cpuOf(tasks: MainTask[], entry: { start: number; duration: number }): number | undefined {
  const within = tasks.filter((t) => t.start >= entry.start - 1 && t.start < entry.start + entry.duration);
  return within.length ? within.reduce((a, t) => a + t.cpu, 0) : undefined;
}
