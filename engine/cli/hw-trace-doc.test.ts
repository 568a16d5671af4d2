// The hardware examples in TRACE.md are real: every line of the JSON blocks in its
// "Hardware events" section is exactly a line the documented command produces today.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hardwareTraceLines } from './hw-trace-options.ts';

const doc = readFileSync(new URL('../TRACE.md', import.meta.url), 'utf8');
// From its heading to the next top-level section (the backward's sections follow it).
const start = doc.indexOf('## Hardware events\n');
const next = doc.indexOf('\n## ', start + 1);
const section = doc.slice(start, next < 0 ? undefined : next);

describe('TRACE.md hardware examples', () => {
  it('are lines of `trace --algo fa4 --gpu b200 --nq 256 --nk 512 --d 192 --dv 128 --dtype bf16`', async () => {
    const examples = [...section.matchAll(/```json\n([\s\S]*?)\n```/g)].flatMap((m) => m[1].split('\n'));
    expect(examples.length).toBeGreaterThanOrEqual(7);
    const produced = new Set(
      await hardwareTraceLines([
        '--algo',
        'fa4',
        '--gpu',
        'b200',
        '--nq',
        '256',
        '--nk',
        '512',
        '--d',
        '192',
        '--dv',
        '128',
        '--dtype',
        'bf16',
      ]),
    );
    for (const line of examples) expect(produced.has(line), line).toBe(true);
  });

  it('backward: are lines of the FA3 (H100) and FA2 (A100) backward schedules of the documented commands', async () => {
    // That section only: from its heading to the next top-level one.
    const from = doc.indexOf('## Hardware events of the backward');
    const to = doc.indexOf('\n## ', from + 1);
    const bwd = doc.slice(from, to < 0 ? undefined : to);
    const examples = [...bwd.matchAll(/```json\n([\s\S]*?)\n```/g)].flatMap((m) => m[1].split('\n'));
    expect(examples.length).toBeGreaterThanOrEqual(4);
    const produced = new Set([
      ...(await hardwareTraceLines(['--algo', 'fa3', '--gpu', 'h100', '--nq', '160', '--nk', '128', '--d', '128', '--backward'])),
      ...(await hardwareTraceLines(['--algo', 'fa2', '--gpu', 'a100', '--nq', '128', '--nk', '128', '--d', '64', '--backward'])),
    ]);
    for (const line of examples) expect(produced.has(line), line).toBe(true);
  });
});
