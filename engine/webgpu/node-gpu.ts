// WebGPU under Node through Dawn (npm package `webgpu`). Only Node entry points (the CLI
// and the benchmark) import this file; the browser bundle never does.
//
// FLASHSCOPE_WEBGPU may point at another copy of the package's index.js (the carried
// .gpu/webgpu/ on a GPU machine). The Dawn toggles unlock f16 and subgroup matrices on
// NVIDIA's Vulkan driver; elsewhere they are ignored.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openWebGpu, WebGpuUnavailable, type WebGpuContext } from './device.ts';

// Dawn rounds timestamps to 2^16 ns by default (a browser's guard against timing attacks):
// 65.5 µs steps are 2% of a 3 ms kernel, so the benchmark asks for exact ones.
export const DAWN_TOGGLES = [
  'enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia',
  'disable-dawn-features=timestamp_quantization',
];

/**
 * FLASHSCOPE_DAWN_FEATURES adds Dawn toggles for diagnostics, e.g. `disable_robustness` to
 * measure what the bounds checks every browser keeps on cost (BENCHMARKS.md, "WebGPU backend, forward");
 * FLASHSCOPE_DAWN_DISABLE turns toggles off, e.g. `use_vulkan_memory_model`.
 */
function toggles(): string[] {
  const on = process.env.FLASHSCOPE_DAWN_FEATURES;
  const off = process.env.FLASHSCOPE_DAWN_DISABLE;
  return [on ? `${DAWN_TOGGLES[0]},${on}` : DAWN_TOGGLES[0], off ? `${DAWN_TOGGLES[1]},${off}` : DAWN_TOGGLES[1]];
}

/** Where the dynamic loader looks for libvulkan.so.1: LD_LIBRARY_PATH, then its cache of the system folders. */
export function hasVulkanLoader(env: NodeJS.ProcessEnv = process.env, cacheFile = '/etc/ld.so.cache'): boolean {
  const lib = 'libvulkan.so.1';
  for (const dir of (env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean)) if (existsSync(join(dir, lib))) return true;
  try {
    return readFileSync(cacheFile).includes(lib);
  } catch {
    return ['/usr/lib', '/lib', '/usr/lib64', '/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu'].some((d) =>
      existsSync(join(d, lib)),
    );
  }
}

let opened: Promise<WebGpuContext> | undefined;

/**
 * The process's one Dawn device, opened on first use: commands run in one process (tests, a
 * benchmark's self-test and timing) then share its compiled kernels. A lost device or a failed
 * open is forgotten, so the next call opens afresh.
 */
export function openNodeWebGpu(): Promise<WebGpuContext> {
  if (!opened) {
    const p = openDevice();
    opened = p;
    p.then(
      (ctx) =>
        ctx.device.lost.then(() => {
          if (opened === p) opened = undefined;
        }),
      () => {
        if (opened === p) opened = undefined;
      },
    );
  }
  return opened;
}

async function openDevice(): Promise<WebGpuContext> {
  // Without a Vulkan loader Dawn finds no adapter on Linux and prints its own source line
  // to stderr first; saying so here keeps the message ours alone.
  if (process.platform === 'linux' && !hasVulkanLoader()) {
    throw new WebGpuUnavailable('No WebGPU adapter: the Vulkan loader (libvulkan.so.1) is not installed, so Dawn has no backend.');
  }
  const spec = process.env.FLASHSCOPE_WEBGPU ?? 'webgpu';
  let mod: { create: (opts: string[]) => GPU; globals: Record<string, unknown> };
  try {
    mod = await import(/* @vite-ignore */ spec);
  } catch (e) {
    throw new WebGpuUnavailable(`could not load the Dawn WebGPU bindings (${spec}): ${e instanceof Error ? e.message : String(e)}`);
  }
  Object.assign(globalThis, mod.globals);
  const ctx = await openWebGpu(mod.create(toggles()));
  return ctx;
}

export const NO_ADAPTER_HELP =
  'No WebGPU adapter under Node on this machine (no GPU, or no Vulkan driver Dawn can use). ' +
  'On a CPU-only Linux machine, SwiftShader works for small shapes: ' +
  'LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json. ' +
  'Kernel correctness in CI is covered on SwiftShader by engine/webgpu/kernel-checks.test.ts.';
