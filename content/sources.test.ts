// Citations a reader can follow: no file of the app, the lessons, the engine, the docs or the
// README may point at the private notes FlashScope started from. Sources are papers (title,
// arXiv id, section) and upstream files at a named commit (docs/sources.md lists them).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
// Built from parts so this file does not match itself.
const SEED = 'seed';
const PATTERN = new RegExp(`${SEED} 00[0-9]|${SEED} notes|${SEED}s/|${SEED}_notes`, 'i');
const TEXT = /\.(ts|tsx|md|css|html|json|mjs|txt)$/;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (TEXT.test(name)) out.push(p);
  }
  return out;
}

describe('sources', () => {
  it('no file of app/, content/, engine/, docs/ or README.md cites the seed documents', () => {
    const all = [...['app', 'content', 'engine', 'docs'].flatMap((d) => files(join(ROOT, d))), join(ROOT, 'README.md')];
    expect(all.length).toBeGreaterThan(100);
    const hits: string[] = [];
    for (const f of all) {
      readFileSync(f, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (PATTERN.test(line)) hits.push(`${relative(ROOT, f)}:${i + 1}: ${line.trim().slice(0, 120)}`);
        });
    }
    expect(hits).toEqual([]);
  });
  it('the pattern catches the forms it is meant to catch', () => {
    for (const s of [`as ${SEED} 003 reads it`, `Corrections to the ${SEED} notes`, `../shared/${SEED}s/000.txt`])
      expect(PATTERN.test(s)).toBe(true);
    expect(PATTERN.test('random inputs from seed 3')).toBe(false);
  });
});
