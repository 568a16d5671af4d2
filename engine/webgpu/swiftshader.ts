// SwiftShader, the Vulkan driver Debian's chromium ships: the WebGPU adapter of the tests on a
// machine without a GPU. vite.config.ts points the vitest workers' Dawn at it.

import { existsSync } from 'node:fs';

export const SWIFTSHADER_DIR = '/usr/lib/chromium';
export const SWIFTSHADER_ICD = `${SWIFTSHADER_DIR}/vk_swiftshader_icd.json`;

/** Whether SwiftShader is installed here (GPU tests skip without it). */
export const hasSwiftShader = (): boolean => existsSync(SWIFTSHADER_ICD);

/**
 * Dawn's toggle for the tests on SwiftShader: WebGPU zero-fills workgroup memory in a prologue
 * that SwiftShader compiles as slowly as the kernel itself (half of a kernel check's CPU).
 * Every kernel writes its workgroup memory before reading it, so without the fill a kernel that
 * did not would read garbage and fail its float64 check: the tests only get stricter.
 */
export const TEST_DAWN_FEATURES = 'disable_workgroup_init';

/** The environment a process needs to find SwiftShader as its Vulkan driver (read by Dawn at start-up), with TEST_DAWN_FEATURES. */
export function swiftShaderEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...env,
    VK_ICD_FILENAMES: SWIFTSHADER_ICD,
    LD_LIBRARY_PATH: [SWIFTSHADER_DIR, env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
    FLASHSCOPE_DAWN_FEATURES: env.FLASHSCOPE_DAWN_FEATURES ?? TEST_DAWN_FEATURES,
  };
}
