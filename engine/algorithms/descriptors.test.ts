// The descriptors are the one place an algorithm is described: code outside an algorithm's
// folder asks its descriptor instead of spelling its id, and what a descriptor claims holds
// for the engine it describes.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { refusalOf } from '../lowprec/fp8-support.ts';
import { DEFAULT_PROBLEM, DTYPES, type AttentionProblem } from '../core/problem.ts';
import { hasSchedule } from '../hw/registry.ts';
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

describe('what the descriptors claim', () => {
  const probe: AttentionProblem = { ...DEFAULT_PROBLEM, batch: 1, hq: 1, hk: 1, nq: 16, nk: 16, d: 16, dv: 16, causal: false };
  for (const d of DESCRIPTORS) {
    it(`${d.id}: the dtypes it lists are the ones its forward takes`, () => {
      const taken = DTYPES.filter((dtype) => refusalOf(d.id, 'forward', { ...probe, dtype }) === null);
      expect([...d.supports.dtypes].sort()).toEqual([...taken].sort());
    });
    it(`${d.id}: defaults start on a GPU exactly when it has a schedule, and its panel switches are its own`, () => {
      expect(d.defaults.gpu !== null).toBe(hasSchedule(d.id, 'forward'));
      expect(d.forward.id).toBe(d.id);
      if (d.backward) expect(d.backward.algorithm.id).toBe(d.id);
      for (const [key, spec] of Object.entries(d.switches)) if (spec.choices) expect(spec.choices, key).toContain(spec.default);
    });
  }
});
