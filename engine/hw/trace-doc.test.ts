// The hardware examples in TRACE.md are real: every line of the JSON blocks in its
// "Hardware events" section is exactly a line the documented command produces today.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hardwareTraceLines } from './trace-lines.ts';

const doc = readFileSync(new URL('../TRACE.md', import.meta.url), 'utf8');
const section = doc.slice(doc.indexOf('## Hardware events'));

describe('TRACE.md hardware examples', () => {
  it('are lines of `trace --algo fa4 --gpu b200 --nq 256 --nk 512 --d 192 --dv 128 --dtype bf16`', () => {
    const examples = [...section.matchAll(/```json\n([\s\S]*?)\n```/g)].flatMap((m) => m[1].split('\n'));
    expect(examples.length).toBeGreaterThanOrEqual(7);
    const produced = new Set(hardwareTraceLines(['--algo', 'fa4', '--gpu', 'b200', '--nq', '256', '--nk', '512', '--d', '192', '--dv', '128', '--dtype', 'bf16']));
    for (const line of examples) expect(produced.has(line), line).toBe(true);
  });
});
