// One shared lesson worker for the page, started on first use. If it dies, the calls in
// flight fail with a message and the next call starts a fresh worker.

import * as Comlink from 'comlink';
import type { LessonApi } from './lesson.worker.ts';

let worker: Worker | null = null;
let api: Comlink.Remote<LessonApi> | null = null;
let failed: ((e: Error) => void)[] = [];

function start(): Comlink.Remote<LessonApi> {
  worker = new Worker(new URL('./lesson.worker.ts', import.meta.url), { type: 'module', name: 'flashscope-lessons' });
  worker.addEventListener('error', (e) => {
    e.preventDefault();
    const err = new Error(`The lesson worker stopped: ${e.message || 'unknown error'}. Try again.`);
    worker?.terminate();
    worker = null;
    api = null;
    const f = failed;
    failed = [];
    for (const fn of f) fn(err);
  });
  return Comlink.wrap<LessonApi>(worker);
}

/** Calls the worker; rejects with a readable message if it crashes meanwhile. */
export function lessonCall<T>(fn: (api: Comlink.Remote<LessonApi>) => Promise<T>): Promise<T> {
  if (!api) api = start();
  const a = api;
  return new Promise<T>((resolve, reject) => {
    const onFail = (e: Error) => reject(e);
    failed.push(onFail);
    fn(a)
      .then(resolve, (e: unknown) => reject(e instanceof Error ? e : new Error(String((e as { message?: string })?.message ?? e))))
      .finally(() => {
        failed = failed.filter((x) => x !== onFail);
      });
  });
}
