import { defineConfig } from 'vitest/config';
import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import react from '@vitejs/plugin-react';
import { hasSwiftShader, swiftShaderEnv } from './engine/webgpu/swiftshader.ts';

// One config for the app build and for vitest: the engine is imported by both the
// worker bundle and the unit tests, so they see the very same module graph.
class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const slow = new Set(sorted.filter((f) => /\bspawnSync\(|\bhasSwiftShader\(/.test(readFileSync(f.moduleId, 'utf8'))));
    return [...sorted.filter((f) => slow.has(f)), ...sorted.filter((f) => !slow.has(f))];
  }
}

// Dawn finds its Vulkan driver through the environment when the process starts: the test
// workers (forked after this runs) get SwiftShader's, so the GPU tests run commands in process
// instead of spawning one per command. A machine's own Vulkan setup, when given, is kept.
if (process.env.VITEST && !process.env.VK_ICD_FILENAMES && hasSwiftShader()) Object.assign(process.env, swiftShaderEnv());

export default defineConfig({
  root: '.',
  // A sub-path to host under (FLASHSCOPE_BASE=/course/flashscope/, or `vite build --base …`);
  // every asset, worker and lazy chunk is then fetched below it.
  base: process.env.FLASHSCOPE_BASE ?? '/',
  publicDir: 'public',
  plugins: [react()],
  // The worker entries import engine/api-worker.ts, re-exports only like api.ts: each worker
  // keeps the modules of the names it uses.
  worker: { format: 'es', rollupOptions: { treeshake: { moduleSideEffects: (id: string) => !/\/engine\/api(-worker)?\.ts$/.test(id) } } },
  build: {
    outDir: 'dist',
    target: 'es2022',
    sourcemap: true,
    // webgpu-test.html: the WebGPU kernel checks the browser tests drive (not linked from the app).
    rollupOptions: {
      input: { main: 'index.html', 'webgpu-test': 'webgpu-test.html' },
      // engine/api.ts only re-exports: each import resolves to the module that holds the name,
      // so a lazy page's engine code stays in its own chunk.
      treeshake: { moduleSideEffects: (id: string) => !id.endsWith('/engine/api.ts') },
    },
  },
  test: {
    include: ['engine/**/*.test.ts', 'app/**/*.test.ts', 'content/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    // vitest's default leaves one core idle on a 2-core CI machine.
    maxWorkers: process.env.CI ? 2 : undefined,
    // Test files share a worker's module graph instead of re-importing the engine per file
    // (import time 48 s → 13 s of the suite); no test relies on a fresh module state.
    isolate: false,
    // Files that start other processes or compile kernels on SwiftShader take tens of seconds each:
    // they go first, so the short files fill both workers at the end instead of one long file alone.
    sequence: { sequencer: SlowFirst },
  },
});
