import { describe, expect, it } from 'vitest';
import {
  chooseDecodeGroup,
  decodeGroupBytes,
  decodeSplits,
  decodeWorkgroups,
  denseGroupHeads,
  DECODE_GROUP_MAX_ROWS,
} from './decode-group-kernel.ts';

const plain = { masked: false, softcap: false, alibi: false };
const head = (hq: number, hk: number, d = 128, nq = 1) => ({ d, dv: d, hq, hk, nq });

describe('flash-decoding group kernel configuration', () => {
  it('takes the bench shapes (d = 128) with the lanes per key their rows need, two keys per step, loaded a step ahead for several rows', () => {
    // rows per key head → lanes per key: at least 8, and a lane's q and O state within 64 floats; 16-byte
    // loads (8 f16 columns) unless a key's lanes would outnumber the row's 8-column groups
    for (const [hq, hk, rows, lpk, ku, cols] of [
      [16, 16, 1, 8, 2, 8],
      [32, 8, 4, 16, 2, 8],
      [64, 8, 8, 32, 2, 4],
    ]) {
      const c = chooseDecodeGroup(head(hq, hk), plain, 32, 49152)!;
      expect([c.rows, c.lpk, c.ku, c.threads, c.cols, c.prefetch]).toEqual([rows, lpk, ku, 128, cols, rows > 1]);
      expect(rows * (128 / c.lpk + 128 / c.lpk)).toBeLessThanOrEqual(64);
      expect(decodeGroupBytes(c)).toBeLessThanOrEqual(16384);
    }
    // paged K/V (loads at the top of each step, page by page) and the study's prefetch: false: four keys a step for more rows
    for (const c of [
      chooseDecodeGroup({ ...head(32, 8), pageSize: 64 }, plain, 32, 49152)!,
      chooseDecodeGroup(head(32, 8), plain, 32, 49152, { prefetch: false })!,
    ])
      expect([c.prefetch, c.ku]).toEqual([false, 4]);
    expect(chooseDecodeGroup({ ...head(16, 16), pageSize: 64 }, plain, 32, 49152)).toMatchObject({ prefetch: false, ku: 2, pageSize: 64 });
    expect(chooseDecodeGroup(head(16, 16), plain, 32, 49152, { prefetch: true })).toMatchObject({ prefetch: true, ku: 2 });
    // a study's preferences win
    expect(chooseDecodeGroup(head(16, 16), plain, 32, 49152, { ku: 1, lpk: 4 })).toMatchObject({ ku: 1, lpk: 4 });
  });

  it('leaves to the split kernel what it cannot carry', () => {
    expect(chooseDecodeGroup(head(16, 16, 130), plain, 32)).toBeUndefined(); // d not a multiple of 4
    expect(chooseDecodeGroup(head(16, 16, 512), plain, 32)).toBeUndefined(); // d over 256
    expect(chooseDecodeGroup(head(16 * (DECODE_GROUP_MAX_ROWS + 1), 16), plain, 32)).toBeUndefined();
    expect(chooseDecodeGroup(head(16, 16), plain, 0)).toBeUndefined(); // no subgroups
  });

  it('splits the keys for about 1024 workgroups, no more splits than the keys hold 256-key runs', () => {
    expect(decodeSplits(32768, 64)).toBe(16); // B = 4, 16 key heads: 16 splits of 2048 keys
    expect(decodeSplits(8192, 64)).toBe(16);
    expect(decodeSplits(8192, 32)).toBe(32); // 32 key heads: 32 splits of 256 keys
    expect(decodeSplits(8192, 8)).toBe(32); // capped at 256 keys a split
    expect(decodeSplits(100, 4)).toBe(1);
    expect(decodeSplits(32768, 64, 2048)).toBe(32); // the bench's --decode-prefs workgroups
    // several query rows per workgroup: half the workgroups, twice the keys a split
    expect([decodeWorkgroups(1), decodeWorkgroups(4)]).toEqual([1024, 512]);
    expect(decodeSplits(32768, 32, decodeWorkgroups(4))).toBe(16); // Hq 32 / Hk 8, B = 4: 2048 keys a split
    for (const [nk, heads] of [
      [8192, 64],
      [131072, 16],
      [5, 1],
      [300, 3],
    ]) {
      const s = decodeSplits(nk, heads);
      expect(s).toBeGreaterThanOrEqual(1);
      expect(s).toBeLessThanOrEqual(Math.ceil(nk / 256)); // no more splits than whole 256-key runs
    }
  });
});

describe('flash-decoding group kernel, part of a key head per workgroup', () => {
  it('carries the asked-for query heads where they divide the group, else the whole group', () => {
    expect(chooseDecodeGroup(head(64, 8), plain, 32, 49152, { groupHeads: 4 })!.rows).toBe(4);
    expect(chooseDecodeGroup(head(64, 8), plain, 32, 49152, { groupHeads: 3 })!.rows).toBe(8);
    expect(chooseDecodeGroup(head(64, 8, 128, 2), plain, 32, 49152, { groupHeads: 2 })!.rows).toBe(4); // Nq = 2: 2 heads × 2 rows
    expect(chooseDecodeGroup(head(64, 8), plain, 32, 49152)!.rows).toBe(8);
  });
});

describe('dense decoding: query heads per workgroup', () => {
  it("keeps a key head's group together up to 4 rows and splits larger ones into the largest part that fits", () => {
    expect(denseGroupHeads({ hq: 16, hk: 16, nq: 1 })).toBe(1);
    expect(denseGroupHeads({ hq: 32, hk: 8, nq: 1 })).toBe(4); // 4 rows: whole group
    expect(denseGroupHeads({ hq: 64, hk: 8, nq: 1 })).toBe(4); // 8 rows: two workgroups of 4
    expect(denseGroupHeads({ hq: 48, hk: 8, nq: 1 })).toBe(3); // 6 heads: two of 3
    expect(denseGroupHeads({ hq: 14, hk: 2, nq: 1 })).toBe(1); // 7 heads: no divisor fits but 1
    expect(denseGroupHeads({ hq: 8, hk: 2, nq: 2 })).toBe(2); // Nq = 2: 2 heads × 2 rows
    expect(denseGroupHeads({ hq: 4, hk: 1, nq: 3 })).toBe(1); // 3 rows a head: one head
  });
});
