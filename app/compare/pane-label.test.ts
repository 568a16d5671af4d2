// A pane's label names the dtype its request carried, the one the pane ran: over tensors from
// files that is the files' dtype, whatever dtype the pane chose for random inputs.

import { describe, expect, it } from 'vitest';
import { DEFAULT_FORM, formToRequest } from '../store/problem-form.ts';
import type { ComparePaneConfig } from './pane-config.ts';
import { paneLabel } from './pane-label.ts';
import { paneRequest } from './shared-request.ts';

describe('a compare pane label', () => {
  const cfg: ComparePaneConfig = { algorithm: 'fa3', dtype: 'fp8e4m3', blockM: '64', blockN: '', features: { pingpong: false }, views: [] };

  it("over tensors from files: the files' dtype the request sent, not the pane's own", () => {
    const files = { ...formToRequest({ ...DEFAULT_FORM, dtype: 'fp16' }), tensors: { files: [], names: [] } as never };
    expect(paneRequest(files, cfg).problem.dtype).toBe('fp16');
    expect(paneLabel(cfg, 1, files)).toBe('2: fa3 fp16 64×auto −pingpong');
  });

  it("over random inputs: the pane's own dtype; none named when the pane runs the shared one", () => {
    const random = formToRequest({ ...DEFAULT_FORM, dtype: 'fp16' });
    expect(paneLabel(cfg, 0, random)).toBe('1: fa3 fp8e4m3 64×auto −pingpong');
    expect(paneLabel({ ...cfg, dtype: undefined, blockM: '', features: {} }, 0, random)).toBe('1: fa3');
    // Before the shared problem is loaded the pane's choice is all there is.
    expect(paneLabel(cfg, 0, undefined)).toBe('1: fa3 fp8e4m3 64×auto −pingpong');
  });
});
