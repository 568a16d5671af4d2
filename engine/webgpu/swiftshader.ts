// SwiftShader, the Vulkan driver Debian's chromium ships: the WebGPU adapter of the tests on a
// machine without a GPU. vite.config.ts points the vitest workers' Dawn at it.

import { existsSync } from 'node:fs';

export const SWIFTSHADER_DIR = '/usr/lib/chromium';
export const SWIFTSHADER_ICD = `${SWIFTSHADER_DIR}/vk_swiftshader_icd.json`;

/** Whether SwiftShader is installed here (GPU tests skip without it). */
export const hasSwiftShader = (): boolean => existsSync(SWIFTSHADER_ICD);

/** The environment a process needs to find SwiftShader as its Vulkan driver (read by Dawn at start-up). */
export function swiftShaderEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...env, VK_ICD_FILENAMES: SWIFTSHADER_ICD, LD_LIBRARY_PATH: [SWIFTSHADER_DIR, env.LD_LIBRARY_PATH].filter(Boolean).join(':') };
}
