// Which run: the pass (forward or backward), the backend (WebGPU or the CPU engine) and the
// kernel path each offers on this adapter.

import { type BackwardPath, type Pass, PATH_LABELS, type WebGpuPath } from '../../engine/api.ts';
import type { Backend } from './protocol.ts';

export interface KernelChoiceProps {
  pass: Pass;
  backend: Backend;
  path: WebGpuPath;
  bwdPath: BackwardPath;
  /** The paths this adapter offers; none when there is no adapter. */
  paths: readonly WebGpuPath[];
  hasAdapter: boolean;
  busy: boolean;
  setPass(p: Pass): void;
  setBackend(b: Backend): void;
  choosePath(p: WebGpuPath): void;
  setBwdPath(p: BackwardPath): void;
}

export function KernelChoice(props: KernelChoiceProps) {
  const { pass, backend, path, bwdPath, paths, hasAdapter, busy } = props;
  return (
    <>
      <div className="wg-row" role="radiogroup" aria-label="pass">
        <label>
          <input type="radio" name="wg-pass" checked={pass === 'forward'} disabled={busy} onChange={() => props.setPass('forward')} />{' '}
          Forward
        </label>
        <label title={hasAdapter ? undefined : 'the backward kernels need a WebGPU adapter'}>
          <input
            type="radio"
            name="wg-pass"
            checked={pass === 'backward'}
            disabled={busy || !hasAdapter}
            onChange={() => {
              props.setPass('backward');
              props.setBackend('webgpu');
            }}
          />{' '}
          Backward
        </label>
        {pass === 'backward' && (
          <label className="wg-field">
            <span>backward kernel</span>
            <select
              value={bwdPath}
              onChange={(e) => props.setBwdPath(e.target.value as BackwardPath)}
              disabled={busy}
              aria-label="backward kernel"
            >
              <option value="flash-f32">f32 (every variant, exact to 1e-6)</option>
              <option value="flash-matrix" disabled={!paths.includes('flash-matrix')}>
                f16 subgroup matrices (tensor cores){paths.includes('flash-matrix') ? '' : ': not offered by this adapter'}
              </option>
            </select>
          </label>
        )}
        {pass === 'backward' && (
          <span className="wg-dim" data-testid="wg-pass-note">
            {bwdPath === 'flash-matrix'
              ? "dQ, dK, dV from a random dO, inputs rounded to f16: the flash-matrix forward for O and LSE, then one K/V-outer kernel on subgroup matrices with dK and dV in registers and dQ added into a fixed-point i32 accumulator (integer atomics: the same bits whatever order the workgroups add in). TFLOP/s count 2.5 × the forward's FLOPs."
              : "dQ, dK, dV from a random dO: the f32 flash forward for O and LSE, then D = rowsum(dO∘O), a dK/dV kernel and a dQ kernel (f32, no atomics). TFLOP/s count 2.5 × the forward's FLOPs."}
          </span>
        )}
      </div>
      <div className="wg-row" role="radiogroup" aria-label="backend">
        <label>
          <input
            type="radio"
            name="wg-backend"
            checked={backend === 'webgpu'}
            disabled={busy || !hasAdapter}
            onChange={() => props.setBackend('webgpu')}
          />{' '}
          WebGPU
        </label>
        <label>
          <input
            type="radio"
            name="wg-backend"
            checked={backend === 'cpu'}
            disabled={busy || pass === 'backward'}
            onChange={() => props.setBackend('cpu')}
          />{' '}
          CPU (FA2 step engine)
        </label>
        {backend === 'webgpu' && pass === 'forward' && (
          <label className="wg-field">
            <span>kernel</span>
            <select value={path} onChange={(e) => props.choosePath(e.target.value as WebGpuPath)} disabled={busy} aria-label="kernel path">
              {paths.map((p) => (
                <option key={p} value={p}>
                  {PATH_LABELS[p]}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
    </>
  );
}
