// The error boundary's fallback: after a failure every store the link fills is back at its
// first state, the fragment is gone (so a reload does not fail again) and one notice says why.

import { afterEach, expect, it, vi } from 'vitest';
import { useCompare } from '../compare/compare-store.ts';
import { useServing } from '../serving/serving-store.ts';
import { DEFAULT_FORM } from '../store/problem-form.ts';
import { useApp } from '../store/store.ts';
import { useShare } from './share-store.ts';
import { restoreDefaults } from './url-sync.ts';

afterEach(() => vi.unstubAllGlobals());

it('puts back the defaults, clears the fragment and says the link could not be opened', () => {
  const replaced: string[] = [];
  vi.stubGlobal('location', { hash: '#s=broken', pathname: '/flashscope/', search: '?x=1' });
  vi.stubGlobal('history', { state: null, replaceState: (_s: unknown, _t: string, url: string) => replaced.push(url) });
  // A half-applied link: a form, compare mode, the serving page, a pending step.
  useApp.getState().addPane('main', ['heatmaps']);
  useApp.getState().setForm('main', { nq: '999', algorithm: 'fa1' });
  useCompare.setState({ mode: 'compare' });
  useServing.setState({ open: true });
  useShare.setState({ pendingSteps: { main: 40 }, notices: ['old'] });

  restoreDefaults('c.join is not a function', true);

  expect(replaced).toEqual(['/flashscope/?x=1']);
  expect(useApp.getState().problem.main?.form).toEqual(DEFAULT_FORM);
  expect(useCompare.getState().mode).toBe('debugger');
  expect(useServing.getState().open).toBe(false);
  expect(useShare.getState().pendingSteps).toEqual({});
  expect(useShare.getState().notices).toEqual(['this link could not be opened (c.join is not a function); the defaults are shown']);
});
