import { describe, expect, it } from 'vitest';
import type { AttentionProblem } from '../../engine/core/problem.ts';
import { DebuggerSession } from '../../engine/debugger/session.ts';
import { smScheduleFor } from '../../engine/algorithms/schedule-registry.ts';
import { timeOrderedCycles } from './memory-cursor.ts';

// FA4's uneven Large-Small-Large ring: the shape where the trace's order and the SM's differ most.
const problem: AttentionProblem = { batch: 1, hq: 1, hk: 1, nq: 256, nk: 768, d: 192, dv: 128, causal: false, dtype: 'bf16' };

async function schedule(algorithm: string, gpu: string, p: AttentionProblem) {
  const s = new DebuggerSession();
  await s.load({ algorithm, problem: p, seed: 3, distribution: 'normal', blocks: {} });
  const events = s.events();
  return { events, sm: smScheduleFor({ algorithm, gpu, problem: p, features: {}, step: 0 }, events) };
}

describe('the memory map in time order', () => {
  it('FA4 d 192 / dv 128: never steps back in time, and every K/V tile a step so far loaded has landed', async () => {
    const { events, sm } = await schedule('fa4', 'b200', problem);
    const raw = sm.view.map.stepCycle;
    // The trace's own order does go back in time here: warpgroups interleave.
    expect(Array.from(raw).some((c, k) => k > 0 && c < raw[k - 1])).toBe(true);
    const t = timeOrderedCycles(sm.view.map);
    for (let k = 1; k < t.length; k++) expect(t[k]).toBeGreaterThanOrEqual(t[k - 1]);
    let checked = 0;
    events.forEach((e, k) => {
      if (e.kind !== 'load' || e.tile.kvBlock < 0 || Number.isNaN(raw[k])) return;
      const tile = `${e.tensors[0]}${e.tile.kvBlock}`;
      // Landed by the cursor of this step and of every later one (until the slot is reused).
      const copy = sm.view.memory.find((m) => m.space === 'smem' && m.tile === tile);
      expect(copy, tile).toBeDefined();
      expect(copy!.ready).toBeLessThanOrEqual(t[k]);
      checked++;
    });
    expect(checked).toBeGreaterThanOrEqual(8);
  });

  it("the layout note reads the uneven ring's slots from the layout (48 + 32 + 48 KiB), an even ring as stages × slot", async () => {
    const { sm } = await schedule('fa4', 'b200', problem);
    const slots = sm.view.resources.smem.buffers.filter((b) => b.name === 'sKV').map((b) => b.bytes / 1024);
    expect(slots).toEqual([48, 32, 48]);
    expect(sm.view.resources.notes[0]).toContain('K/V ring = 48 + 32 + 48 KiB = 128 KiB (Large-Small-Large)');
    const even = await schedule('fa4', 'b200', { ...problem, d: 128, dv: 128 });
    const evenSlots = even.sm.view.resources.smem.buffers.filter((b) => b.name === 'sKV');
    expect(even.sm.view.resources.notes[0]).toContain(`K/V ring = ${evenSlots.length} × ${evenSlots[0].bytes / 1024} KiB`);
  });
});
