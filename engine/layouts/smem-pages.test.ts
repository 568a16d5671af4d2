// The SMEM view of a paged run: every K/V buffer names the physical pages and slots its
// keys came from, checked here against the block table itself (page = table[b, key / page
// size], slot = key mod page size); fmha_v2 alternates two stages, flash-decoding and FA2
// reuse one; a compute step reads the buffer holding its keys.

import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVING_FORM, generateServing, runServing, type ServingForm } from './serving-run.ts';
import { smemAt } from './smem-pages.ts';

const form = (algorithm: string): ServingForm => ({
  ...DEFAULT_SERVING_FORM,
  layout: 'paged',
  algorithm,
  seqlensK: [70, 5, 33],
  pageSize: 16,
  hq: 2,
  hk: 1,
  d: 16,
  nq: 1,
  splits: 2,
});

describe('SMEM of a paged run', () => {
  for (const [algorithm, stages] of [
    ['fmha-v2', 2],
    ['flash-decoding', 1],
    ['fa2', 1],
  ] as const) {
    it(`${algorithm}: each K/V load fills stage n mod ${stages} with the keys of the pages the table maps them to`, () => {
      const f = form(algorithm);
      const run = runServing(generateServing(f), algorithm, { splits: 2, blockN: 8 });
      const table = run.blockTable!;
      const maxPages = run.maxPages!;
      let loads = 0;
      let lastCta = '';
      let n = 0;
      run.steps.forEach((s, i) => {
        const st = smemAt(run, i);
        if (!st) return;
        const cta = `${s.b}/${s.h}/${s.qBlock}/${s.split}`;
        if (cta !== lastCta) n = 0;
        lastCta = cta;
        expect(st.buffers.map((x) => x.name)).toEqual(['sQ', ...Array(stages).fill('sK'), ...Array(stages).fill('sV')]);
        if (!(s.kind === 'load' && s.tensors?.includes('K'))) return;
        loads++;
        const buf = st.buffers.find((x) => x.name === 'sK' && x.role === 'loading')!;
        expect(buf.stage).toBe(n++ % stages);
        expect(buf.holds).toEqual(s.cols);
        // Tiles of 8 keys on pages of 16: one page per tile, half of it.
        expect(buf.spans).toHaveLength(1);
        const [k0, k1] = s.cols;
        expect(buf.spans![0].page).toBe(table[s.b * maxPages + Math.floor(k0 / 16)]);
        expect(buf.spans![0].slots).toEqual([k0 % 16, ((k1 - 1) % 16) + 1]);
        expect(buf.bytes).toBe(8 * 16 * 4);
        expect(st.buffers.find((x) => x.name === 'sV' && x.stage === buf.stage)!.spans).toEqual(buf.spans);
      });
      expect(loads).toBe(2 * (Math.ceil(70 / 8) + 1 + Math.ceil(33 / 8)));
    });
  }

  it('a tile wider than a page spans two pages and reads from both; qk reads the sK that holds its keys', () => {
    const run = runServing(generateServing(form('fmha-v2')), 'fmha-v2', { blockN: 32 });
    const i = run.steps.findIndex((s) => s.kind === 'qk' && s.b === 0 && s.cols[0] === 32);
    const st = smemAt(run, i)!;
    const reading = st.buffers.filter((x) => x.role === 'reading');
    expect(reading.map((x) => x.name)).toEqual(['sQ', 'sK']);
    const sk = reading[1];
    expect(sk.holds).toEqual([32, 64]);
    expect(sk.spans!.map((x) => x.page)).toEqual([run.blockTable![2], run.blockTable![3]]);
    expect(sk.spans!.map((x) => x.slots)).toEqual([
      [0, 16],
      [0, 16],
    ]);
    // Stage 0 holds tile 0 or 2 (keys 0–31 / 64–69); the other tile is in stage 1.
    expect(sk.stage).toBe(1);
  });

  it('has no SMEM view for varlen runs, the combine step, or algorithms whose SMEM has another shape', () => {
    const fa3 = runServing(generateServing(form('fa3')), 'fa3');
    expect(smemAt(fa3, 1)).toBeUndefined();
    const v = runServing(generateServing(DEFAULT_SERVING_FORM), 'fa2');
    expect(smemAt(v, 0)).toBeUndefined();
    const run = runServing(generateServing(form('flash-decoding')), 'flash-decoding', { splits: 2 });
    expect(
      smemAt(
        run,
        run.steps.findIndex((s) => s.kind === 'combine'),
      ),
    ).toBeUndefined();
  });
});
