// The WebGPU panel's worker: the Comlink client, the adapter probe, the run in flight and the
// last result. A new result replaces the old only when its run succeeds; a cancel or a crash
// keeps the previous result and restarts the worker.

import { useCallback, useEffect, useRef, useState } from 'react';
import type { AttentionProblem } from '../../engine/api.ts';
import type { AdapterReport, RunReport, RunRequest } from './protocol.ts';
import { startWebGpuWorker, type WebGpuClient } from './webgpu-client.ts';
import { onFirstSeen } from './first-seen.ts';

export const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

export type Probe = { state: 'probing' } | { state: 'ok'; adapter: AdapterReport } | { state: 'none'; message: string };
export type RunStage = { stage: string; fraction: number };

/** What the panel hears of the probe: an adapter to pick a path on, or none (the CPU engine takes over). */
export interface ProbeListener {
  onAdapter(adapter: AdapterReport): void;
  onNoAdapter(): void;
}

export function useWebGpuWorker(listener: ProbeListener) {
  const [probe, setProbe] = useState<Probe>({ state: 'probing' });
  const [progress, setProgress] = useState<RunStage | null>(null);
  const [report, setReport] = useState<RunReport | null>(null);
  // The problem of the report shown (the roofline counts need its shape).
  const [reportProblem, setReportProblem] = useState<AttentionProblem | null>(null);
  const [error, setError] = useState<string | null>(null);
  const worker = useRef<WebGpuClient | null>(null);
  const seq = useRef(0);
  // The latest listener, so that starting the worker does not depend on the panel's renders.
  const heard = useRef(listener);
  heard.current = listener;

  const start = useCallback(() => {
    const client = startWebGpuWorker((why) => {
      setProgress(null);
      setError(`The WebGPU worker failed: ${why}. Your settings are kept; run again to restart it.`);
      worker.current?.dispose();
      worker.current = null;
    });
    worker.current = client;
    const id = ++seq.current;
    client.api.probe().then(
      (adapter) => {
        if (id !== seq.current) return;
        setProbe({ state: 'ok', adapter });
        heard.current.onAdapter(adapter);
      },
      (e: unknown) => {
        if (id !== seq.current) return;
        setProbe({ state: 'none', message: message(e) });
        heard.current.onNoAdapter();
      },
    );
  }, []);

  // The worker and its probe start once the panel is reached (first-seen.ts).
  const panel = useRef<HTMLElement>(null);
  useEffect(() => {
    const stop = panel.current ? onFirstSeen(panel.current, start) : (start(), () => {});
    return () => {
      stop();
      worker.current?.dispose();
    };
  }, [start]);

  const run = (req: RunRequest) => {
    if (!worker.current) start();
    setError(null);
    const id = ++seq.current;
    // Progress comes on its own channel: once the run has settled, a late stage is dropped.
    let settled = false;
    const onProgress = (stage: string, fraction: number) => {
      if (!settled && id === seq.current) setProgress({ stage, fraction });
    };
    setProgress({ stage: 'starting', fraction: 0 });
    worker.current!.api.run(req, worker.current!.progress(onProgress)).then(
      (r) => {
        settled = true;
        if (id !== seq.current) return;
        setProgress(null);
        setReport(r);
        setReportProblem(req.problem);
        setError(null);
      },
      (e: unknown) => {
        settled = true;
        if (id !== seq.current) return;
        setProgress(null);
        setError(message(e));
      },
    );
  };

  const cancel = () => {
    worker.current?.dispose();
    worker.current = null;
    setProgress(null);
    setError('Run cancelled. The GPU work was abandoned with its worker; settings and the previous result are kept.');
    start();
  };

  return { panel, probe, progress, report, reportProblem, error, setError, run, cancel };
}
