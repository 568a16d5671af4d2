import { describe, expect, it } from 'vitest';
import { dqAccumulationAt, type DqAdd } from './dq-accumulation.ts';

/** K/V-outer adds of one head: worker j visits row blocks first(j) … rows−1, one step each. */
function kvOuter(rows: number, cols: number, first: (j: number) => number): DqAdd[] {
  const out: DqAdd[] = [];
  let step = 0;
  for (let j = 0; j < cols; j++)
    for (let i = first(j); i < rows; i++) out.push({ step: (step += 3), b: 0, h: 0, qBlock: i, kvBlock: j, atomic: true });
  return out;
}

describe('dQ accumulation', () => {
  it('without a mask every worker adds into row block k at its k-th iteration: all of them land together', () => {
    const adds = kvOuter(4, 4, () => 0);
    const at = adds.find((a) => a.kvBlock === 2 && a.qBlock === 1)!;
    const s = dqAccumulationAt(adds, at.step, 0, 0, 4, 4);
    expect(s.current).toEqual(at);
    expect(s.position).toBe(1);
    expect(s.together).toEqual([0, 1, 3]);
    // Workers 0 and 1 are done, worker 2 has added into row blocks 0 and 1, worker 3 nothing yet.
    expect(Array.from(s.count)).toEqual([1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0]);
    expect(s.contributors[3]).toEqual([0, 1, 2, 3]);
  });

  it('under a causal mask worker j starts at row block j, so in step no two workers meet', () => {
    const adds = kvOuter(4, 4, (j) => j);
    for (const a of adds) expect(dqAccumulationAt(adds, a.step, 0, 0, 4, 4).together).toEqual([]);
    const s = dqAccumulationAt(adds, adds[adds.length - 1].step, 0, 0, 4, 4);
    expect(s.contributors.map((c) => c.length)).toEqual([1, 2, 3, 4]);
  });

  it('a step that is not an add has no current add, and other heads do not count', () => {
    const adds = [...kvOuter(2, 2, () => 0), ...kvOuter(2, 2, () => 0).map((a) => ({ ...a, h: 1, step: a.step + 100 }))];
    const s = dqAccumulationAt(adds, 4, 0, 0, 2, 2);
    expect(s.current).toBeUndefined();
    expect(s.together).toEqual([]);
    expect(Array.from(s.count)).toEqual([1, 0, 0, 0]);
  });
});
