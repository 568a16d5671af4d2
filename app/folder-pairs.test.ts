// app/ is feature folders over a shared layer: a folder pair that imports each other both
// ways is a layer that looks back up.

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const APP = resolve(import.meta.dirname);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/** The top folder under app/ that holds `file` ('.' for app/ itself). */
const folderOf = (file: string) => {
  const parts = relative(APP, file).split(sep);
  return parts.length > 1 ? parts[0] : '.';
};

/** Every import arrow from one app/ folder to another, as 'from→to'. */
function folderArrows(): Set<string> {
  const arrows = new Set<string>();
  for (const file of sourceFiles(APP)) {
    const from = folderOf(file);
    for (const m of readFileSync(file, 'utf8').matchAll(/(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
      const target = resolve(dirname(file), m[1]);
      if (!target.startsWith(APP + sep)) continue;
      const to = folderOf(target);
      if (to !== from) arrows.add(`${from}→${to}`);
    }
  }
  return arrows;
}

/** The folder pairs whose arrows run both ways, as 'a↔b' with a < b, sorted. */
function twoWayPairs(arrows: Set<string>): string[] {
  const pairs = new Set<string>();
  for (const a of arrows) {
    const [from, to] = a.split('→');
    if (arrows.has(`${to}→${from}`)) pairs.add([from, to].sort().join('↔'));
  }
  return [...pairs].sort();
}

describe('app/ folder layering', () => {
  it('names a pair only when its arrows run both ways', () => {
    expect(twoWayPairs(new Set(['a→b', 'b→a', 'a→c', 'd→c']))).toEqual(['a↔b']);
  });

  it("sees the app's imports", () => {
    expect(folderArrows()).toContain('pane→panels');
  });

  it('has no two-way folder pairs', () => {
    expect(twoWayPairs(folderArrows())).toEqual([]);
  });
});
