import { describe, expect, it } from 'vitest';
import { chooseDecodeGroup, decodeGroupBytes, decodeSplits, DECODE_GROUP_MAX_ROWS } from './decode-group-kernel.ts';

const plain = { masked: false, softcap: false, alibi: false };
const head = (hq: number, hk: number, d = 128, nq = 1) => ({ d, dv: d, hq, hk, nq });

describe('flash-decoding group kernel configuration', () => {
  it('takes the bench shapes (d = 128) with the lanes per key their rows need and two keys per step', () => {
    // rows per key head → lanes per key: a lane's q and O state stays within 16 vec4s
    for (const [hq, hk, rows, lpk] of [[16, 16, 1, 4], [32, 8, 4, 16], [64, 8, 8, 32]]) {
      const c = chooseDecodeGroup(head(hq, hk), plain, 32, 49152)!;
      expect([c.rows, c.lpk, c.ku, c.threads]).toEqual([rows, lpk, 2, 128]);
      expect(rows * (32 / c.lpk + 32 / c.lpk)).toBeLessThanOrEqual(16);
      expect(decodeGroupBytes(c)).toBeLessThanOrEqual(16384);
    }
    // a study's preferences win
    expect(chooseDecodeGroup(head(16, 16), plain, 32, 49152, { ku: 4, lpk: 8 })).toMatchObject({ ku: 4, lpk: 8 });
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
    for (const [nk, heads] of [[8192, 64], [131072, 16], [5, 1], [300, 3]]) {
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
