// What the probe found: the adapter with its features and limits (or why there is none), and
// the features it lacks with what each would bring.

import { missingFeatureAdvice } from './feature-advice.ts';
import type { Probe } from './useWebGpuWorker.ts';

export function AdapterStatus({ probe }: { probe: Probe }) {
  const advice = probe.state === 'ok' ? missingFeatureAdvice(probe.adapter.features, probe.adapter.matrixF16) : [];
  return (
    <>
      <div className="wg-adapter" role="status" aria-label="adapter">
        {probe.state === 'probing' && 'Looking for a WebGPU adapter…'}
        {probe.state === 'none' && <span className="wg-err">WebGPU is unavailable: {probe.message} The CPU engine below still works.</span>}
        {probe.state === 'ok' && (
          <>
            <b>{probe.adapter.name}</b>
            {probe.adapter.fallback && ' (software adapter: correct but slow; timings mean nothing here)'}
            <div className="wg-dim">features: {probe.adapter.features.join(', ')}</div>
            <div className="wg-dim">limits: {probe.adapter.limits}</div>
          </>
        )}
      </div>
      {advice.length > 0 && (
        <div className="wg-missing">
          <span className="wg-dim">Missing here (the kernel list starts on the fastest path that runs):</span>
          <ul aria-label="missing adapter features">
            {advice.map((a) => (
              <li key={a.feature}>
                <b>{a.feature}</b>: {a.loses}. {a.how}.
              </li>
            ))}
          </ul>
        </div>
      )}
    </>
  );
}
