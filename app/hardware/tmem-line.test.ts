import { describe, expect, it } from 'vitest';
import type { MemInterval } from '../../engine/api.ts';
import { tmemLine } from './tmem-line.ts';

const block = (tile: string, column: number, columns: number, ready = 0): MemInterval => ({
  space: 'tmem',
  buffer: tile[0],
  stage: 0,
  offset: column,
  bytes: columns * 128 * 4,
  tile,
  role: 'mma',
  start: 0,
  ready,
  end: 1000,
});

describe('the TMEM line a phone reads', () => {
  it('names every block with its K/V block and columns, by column, the P over S after it', () => {
    const line = tmemLine([block('O0', 256, 128), block('P0.3', 0, 64, 50), block('S0.3', 0, 128), block('S1.2', 128, 128)], 128, 10);
    expect(line).toBe('S0 (K/V 3) cols 0–127 · P0 (K/V 3) cols 0–63 (loading) · S1 (K/V 2) cols 128–255 · O0 cols 256–383');
  });

  it('says so when nothing is in tensor memory', () => {
    expect(tmemLine([], 128, 0)).toBe('Empty.');
  });
});
