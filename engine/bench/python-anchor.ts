// Launches one of the benchmark's Python programs (bench/*.py, where all benchmark code that
// runs on PyTorch lives) and reads its JSON lines back. The program takes its shapes from
// FLASHSCOPE_ANCHOR_SPEC and prints one {"note"} line (or {"error"} when it cannot run at
// all), then one {"key", ...} line per shape. The benches run from the project root, bundled
// or not, so the program is found at bench/<name> there.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export interface AnchorLine {
  key: string;
  error?: string;
  ms?: number;
  err?: number;
}

/** Never throws: a missing program, Python, PyTorch or GPU comes back as `note` ("no CUDA anchor: …") with no lines. */
export function runPythonAnchor(
  program: string,
  spec: unknown,
  timeoutMs: number,
  python = process.env.FLASHSCOPE_PYTHON ?? 'python3',
): { note: string; lines: AnchorLine[] } {
  const path = resolve('bench', program);
  if (!existsSync(path)) return { note: `no CUDA anchor: ${path} is missing (run the bench from the project root)`, lines: [] };
  const run = spawnSync(python, [path], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
    timeout: timeoutMs,
    env: { ...process.env, PYTHONUNBUFFERED: '1', FLASHSCOPE_ANCHOR_SPEC: JSON.stringify(spec) },
  });
  if (run.error) return { note: `no CUDA anchor: could not start ${python} (${run.error.message})`, lines: [] };
  let note = '';
  const lines: AnchorLine[] = [];
  for (const text of run.stdout.split('\n')) {
    if (!text.trim().startsWith('{')) continue;
    const x = JSON.parse(text) as Partial<AnchorLine> & { note?: string };
    if (x.key === undefined) {
      if (x.error) return { note: `no CUDA anchor: ${x.error}`, lines: [] };
      if (x.note) note = x.note;
    } else lines.push(x as AnchorLine);
  }
  if (!note)
    return { note: `no CUDA anchor: ${python} exited with ${run.status}: ${run.stderr.trim().split('\n').slice(-3).join(' / ')}`, lines };
  return { note, lines };
}
