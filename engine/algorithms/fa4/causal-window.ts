// interface.py's _resolve_causal_local_window, which FA4's forward and backward both call.

import type { DispatchInput } from '../../hw/dispatch-input.ts';

/** The mask a launch runs: causal, local with its window sides (null is upstream's None), or neither. */
export interface CausalWindow {
  isCausal: boolean;
  isLocal: boolean;
  windowLeft: number | null;
  windowRight: number | null;
}

/** _resolve_causal_local_window (flash_attn/cute/interface.py@0251105a l. 388-408); -1 in the problem is upstream's None. */
export function resolveCausalWindow(p: Pick<DispatchInput, 'causal' | 'window'>): CausalWindow {
  let left: number | null = p.window && p.window.left >= 0 ? p.window.left : null;
  let right: number | null = p.window && p.window.right >= 0 ? p.window.right : null;
  let isCausal = p.causal;
  let isLocal = false;
  if (isCausal) right = 0;
  if (left !== null && right !== null && left + right < 0) {
    left = null;
    right = null;
  }
  if (left !== null || right !== null) {
    if (left === null && right === 0) {
      isCausal = true;
      right = null;
    } else {
      isCausal = false;
      isLocal = true;
    }
  }
  return { isCausal, isLocal, windowLeft: left, windowRight: right };
}
