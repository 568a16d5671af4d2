// The descriptors are the one place an algorithm is described: code outside an algorithm's
// folder asks its descriptor instead of spelling its id, and what a descriptor claims holds
// for the engine it describes.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasSchedule } from './schedule-registry.ts';
import { BUILT_IN_ALGORITHMS, DESCRIPTORS } from './registry.ts';

const root = new URL('../../', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) ? [path] : [];
  });
}

/** Lines of code, comments left out (a comment may name an algorithm). */
function code(path: string): string {
  return readFileSync(join(root, path), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .filter((line) => !line.trim().startsWith('//'))
    .join('\n');
}

// 'standard' is left out: the word is also the ALiBi slope mode and a WebGPU path.
const IDS = Object.keys(BUILT_IN_ALGORITHMS).filter((id) => id !== 'standard');
const FILES = [...sources('app'), ...sources('engine')].map((path) => ({ path, text: code(path) }));

describe('algorithm ids outside their folders', () => {
  it('finds the sources it counts (a walk that found nothing would pass vacuously)', () => {
    expect(FILES.length).toBeGreaterThan(250);
    expect(FILES.some((f) => f.path === relative(root, join(root, 'engine/algorithms/fa3/descriptor.ts')))).toBe(true);
  });

  for (const id of IDS) {
    it(`'${id}' is spelled as a string literal in at most two source files outside engine/algorithms/${id}/`, () => {
      const quoted = new RegExp(`['"\`]${id.replace(/[-]/g, '\\-')}['"\`]`);
      // The pattern finds the id where it must be: its own descriptor spells it.
      expect(quoted.test(code(`engine/algorithms/${id}/descriptor.ts`))).toBe(true);
      const outside = FILES.filter((f) => !f.path.startsWith(`engine/algorithms/${id}/`) && quoted.test(f.text)).map((f) => f.path);
      expect(outside.length, outside.join(', ')).toBeLessThanOrEqual(2);
    });
  }
});

describe('branching on an algorithm id', () => {
  // Lessons may name algorithms (their presets load them), but code that branches on an id
  // asks the descriptor instead. Where a branch stays, the reason is given.
  const ALLOWED: Record<string, string[]> = {
    // The quantized score formula: SageAttention folds the softmax scale into Q's INT8 scale.
    'content/formulas.ts': ['sage'],
    // The low-precision chapters' "try this" changes act on their FA3 FP8 and SageAttention panes.
    'content/lessons/chapters/ch12-low-precision.ts': ['fa3', 'sage'],
    'content/lessons/chapters/ch13-low-precision-int8.ts': ['fa3', 'sage'],
  };
  const ALL_IDS = Object.keys(BUILT_IN_ALGORITHMS);
  const WITH_CONTENT = [...FILES, ...sources('content').map((path) => ({ path, text: code(path) }))];

  it('reads content/ as well as app/ and engine/', () => {
    expect(WITH_CONTENT.some((f) => f.path === 'content/formulas.ts')).toBe(true);
  });

  for (const id of ALL_IDS) {
    it(`no source outside engine/algorithms/${id}/ compares an algorithm with '${id}'`, () => {
      const q = `['"\`]${id.replace(/[-]/g, '\\-')}['"\`]`;
      // An algorithm-valued expression compared with the id: `algorithm === 'fa1'`, `r.algorithm !== 'sage'`, `algo.id === …`.
      const compared = new RegExp(`(algorithm|\\.id)\\s*[!=]==?\\s*${q}|${q}\\s*[!=]==?\\s*[\\w.]*(algorithm|\\.id)\\b`);
      const found = WITH_CONTENT.filter(
        (f) => !f.path.startsWith(`engine/algorithms/${id}/`) && compared.test(f.text) && !ALLOWED[f.path]?.includes(id),
      ).map((f) => f.path);
      expect(found, found.join(', ')).toEqual([]);
    });
  }
});

describe('what the descriptors claim', () => {
  for (const d of DESCRIPTORS) {
    it(`${d.id}: defaults start on a GPU exactly when it has a schedule, and its panel switches are its own`, () => {
      expect(d.defaults.gpu !== null).toBe(hasSchedule(d.id, 'forward'));
      expect(d.forward.id).toBe(d.id);
      if (d.backward) expect(d.backward.algorithm.id).toBe(d.id);
      for (const [key, spec] of Object.entries(d.switches)) if (spec.choices) expect(spec.choices, key).toContain(spec.default);
    });
  }
});
