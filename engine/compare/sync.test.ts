// The K/V-block sync axis on traces whose Q tile is stepped in slices: SageAttention 2
// (one unit per 32-row warp, qPerWarp), SageAttention 1 (the whole 128-row tile) and FA3
// (two 64-row ping-pong warpgroups, K/V blocks visited last to first). Each follower must
// land on the step that works on the leader's first query row and first key column, in
// the same phase (for loads: of the same tensor), on the slice that holds that row.

import { describe, expect, it } from 'vitest';
import { DebuggerSession } from '../debugger/session.ts';
import type { LoadRequest } from '../request.ts';
import type { TraceEvent } from '../trace/events.ts';
import { pointOf, stepFor } from './sync.ts';

const problem = { batch: 1, hq: 1, hk: 1, nq: 128, nk: 256, d: 64, dv: 64, causal: false, dtype: 'fp16' as const };

async function trace(algorithm: string, blockN: number, features: Record<string, boolean | number>): Promise<readonly TraceEvent[]> {
  const s = new DebuggerSession();
  const req: LoadRequest = { algorithm, problem, seed: 1, distribution: 'normal', blocks: { blockM: 128, blockN }, features };
  await s.load(req);
  return s.events();
}

const tensorsOf = (e: TraceEvent) => (e.kind === 'load' || e.kind === 'write' ? e.tensors.join(',') : '');
/** What identifies a step's work: its rows, its key columns, its phase. */
const workOf = (e: TraceEvent) => `${e.b}/${e.h} rows ${e.tile.rows} cols ${e.tile.cols} ${e.kind} ${tensorsOf(e)}`;

describe("sync by K/V block on sliced Q tiles (sage v1, sage v2, FA3's ping-pong warpgroups)", async () => {
  const traces = {
    fa3: await trace('fa3', 128, {}),
    fa3Forward: await trace('fa3', 128, { reverseKv: false }),
    sage1: await trace('sage', 64, { version: 1 }),
    sage2: await trace('sage', 64, { version: 2 }),
  };

  it('the traces are sliced as described (so the cases below test what they claim)', () => {
    const rowsOf = (ev: readonly TraceEvent[]) => [...new Set(ev.filter((e) => e.kind === 'qk').map((e) => e.tile.rows.join('-')))];
    expect(rowsOf(traces.sage2)).toEqual(['0-32', '32-64', '64-96', '96-128']);
    expect(rowsOf(traces.sage1)).toEqual(['0-128']);
    expect(rowsOf(traces.fa3).sort()).toEqual(['0-64', '64-128']);
    // FA3 starts on its last K/V block; sage on its first.
    expect(traces.fa3.find((e) => e.kind === 'qk')!.tile.cols).toEqual([128, 256]);
    expect(traces.sage2.find((e) => e.kind === 'qk')!.tile.cols).toEqual([0, 64]);
  });

  it('a pane synced to itself stays on its own step, at every step with a K/V block or a phase of its own', () => {
    for (const [name, ev] of Object.entries(traces)) {
      const seen = new Set<string>();
      for (let i = 0; i < ev.length; i++) {
        const w = workOf(ev[i]);
        // A repeat of the same work (none expected in these traces) would rightly map to its first occurrence.
        if (seen.has(w)) continue;
        seen.add(w);
        const r = stepFor(ev, pointOf(ev, i, null), 'kv', null);
        expect(r, `${name} step ${i}: ${w}`).toEqual({ step: i, used: 'kv' });
      }
    }
  });

  it('every K/V step of each trace lands each follower on the slice holding its first row, on its key column, in the same phase', () => {
    for (const [ln, lead] of Object.entries(traces)) {
      for (const [fn, follow] of Object.entries(traces)) {
        for (let i = 0; i < lead.length; i++) {
          const pt = pointOf(lead, i, null);
          if (pt.col < 0) continue;
          const { step, used } = stepFor(follow, pt, 'kv', null);
          const e = follow[step];
          const where = `${ln} step ${i} (${workOf(lead[i])}) → ${fn} step ${step} (${workOf(e)})`;
          expect(used, where).toBe('kv');
          expect(pt.row >= e.tile.rows[0] && pt.row < e.tile.rows[1], where).toBe(true);
          expect(pt.col >= e.tile.cols[0] && pt.col < e.tile.cols[1], where).toBe(true);
          // The phase must match (loads by tensor) wherever the follower has it on that row and key; the
          // first block a kernel visits has no rescale, so there it is the block's first step on the row.
          const here = follow.filter(
            (x) =>
              x.b === pt.b &&
              x.h === pt.h &&
              pt.row >= x.tile.rows[0] &&
              pt.row < x.tile.rows[1] &&
              x.tile.kvBlock >= 0 &&
              pt.col >= x.tile.cols[0] &&
              pt.col < x.tile.cols[1],
          );
          const same = here.find((x) => x.kind === lead[i].kind && tensorsOf(x) === tensorsOf(lead[i]));
          if (same) expect(e, where).toBe(same);
          else {
            expect(lead[i].kind, where).toBe('rescale');
            expect(e, where).toBe(here[0]);
          }
          expect(
            follow.findIndex((x) => workOf(x) === workOf(e)),
            where,
          ).toBe(step);
        }
      }
    }
  });

  it("FA3's first score tile (warpgroup 0, its last K/V block) puts sage 2 on warp 0's scores of that block; FA3 in forward order on sage's first", () => {
    const lead = traces.fa3.findIndex((e) => e.kind === 'qk');
    expect(traces.fa3[lead]).toMatchObject({ warpgroup: 0, tile: { rows: [0, 64], cols: [128, 256] } });
    const s2 = traces.sage2[stepFor(traces.sage2, pointOf(traces.fa3, lead, null), 'kv', null).step];
    expect(s2).toMatchObject({ kind: 'qk', warp: 0, tile: { rows: [0, 32], cols: [128, 192] } });
    // Not a later warp's step: the leader's rows 0–63 start in warp 0.
    const fwd = traces.fa3Forward.findIndex((e) => e.kind === 'qk');
    const first = stepFor(traces.sage2, pointOf(traces.fa3Forward, fwd, null), 'kv', null).step;
    expect(first).toBe(traces.sage2.findIndex((e) => e.kind === 'qk'));
  });

  it("sage 2's warps map onto FA3's warpgroups (warps 0–1 → warpgroup 0, 2–3 → 1) and onto sage 1's whole tile", () => {
    for (let i = 0; i < traces.sage2.length; i++) {
      const l = traces.sage2[i];
      if (l.kind !== 'rowmax') continue;
      const pt = pointOf(traces.sage2, i, null);
      const f = traces.fa3[stepFor(traces.fa3, pt, 'kv', null).step];
      expect(f.kind).toBe('rowmax');
      expect(f.warpgroup).toBe(l.warp! < 2 ? 0 : 1);
      const s1 = traces.sage1[stepFor(traces.sage1, pt, 'kv', null).step];
      expect(s1).toMatchObject({ kind: 'rowmax', tile: { rows: [0, 128] } });
      expect(pt.col >= s1.tile.cols[0] && pt.col < s1.tile.cols[1]).toBe(true);
    }
    // FA3's warpgroup 1 (rows 64–127) lands on sage 2's warp 2, the first warp of those rows.
    const wg1 = traces.fa3.findIndex((e) => e.kind === 'pv' && e.warpgroup === 1);
    expect(traces.sage2[stepFor(traces.sage2, pointOf(traces.fa3, wg1, null), 'kv', null).step]).toMatchObject({ kind: 'pv', warp: 2 });
  });
});
