// The Serving page's file guard: a file too large to hold is refused by its size, before any
// read, with a message naming the file, its role and the limit.

import { expect, it } from 'vitest';
import { MAX_SERVING_FILE_BYTES, servingFileRefusal } from './serving-api.ts';

it('refuses a file over the limit by name and role, and lets one at the limit through', () => {
  expect(servingFileRefusal('k_cache', { name: 'kc.npy', size: MAX_SERVING_FILE_BYTES })).toBeUndefined();
  expect(servingFileRefusal('k_cache', { name: 'kc.npy', size: 8 * 2 ** 30 })).toBe(
    'kc.npy (k_cache): 8192.0 MB, more than the 64.0 MB the Serving page reads from one file; use fewer sequences, shorter caches or fewer heads',
  );
});
