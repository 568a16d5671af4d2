// The Vulkan-loader check that lets the CLI say "no adapter" itself, before Dawn prints
// its own source line: found through LD_LIBRARY_PATH or the loader cache, else not.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hasVulkanLoader } from './node-gpu.ts';

const dir = mkdtempSync(join(tmpdir(), 'flashscope-vulkan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('hasVulkanLoader', () => {
  it('finds libvulkan.so.1 on LD_LIBRARY_PATH or in the loader cache, and nowhere else', () => {
    const empty = join(dir, 'empty.cache');
    writeFileSync(empty, 'libc.so.6\0libm.so.6\0');
    expect(hasVulkanLoader({}, empty)).toBe(false);
    expect(hasVulkanLoader({ LD_LIBRARY_PATH: `/nonexistent:${dir}` }, empty)).toBe(false);
    writeFileSync(join(dir, 'libvulkan.so.1'), '');
    expect(hasVulkanLoader({ LD_LIBRARY_PATH: `/nonexistent:${dir}` }, empty)).toBe(true);
    const cache = join(dir, 'ld.so.cache');
    writeFileSync(cache, 'libc.so.6\0libvulkan.so.1\0');
    expect(hasVulkanLoader({}, cache)).toBe(true);
  });
});
