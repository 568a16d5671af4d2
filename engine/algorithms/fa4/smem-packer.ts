// The byte offsets of a kernel's SharedStorage struct, as the FA4 schedules lay it out on their
// resource sheet (both the main kernel and the d = 256 kernel declare members in order).

import type { ResourceSheet } from '../../hw/events.ts';

/** Lays out a kernel's SharedStorage members in declaration order, each at its alignment. */
export class SmemPacker {
  /** The first byte after the last member. */
  end = 0;
  constructor(private readonly sheet: ResourceSheet) {}
  align(to: number): number {
    this.end = Math.ceil(this.end / to) * to;
    return this.end;
  }
  /** Adds one member (a stage of a buffer) and returns its offset. */
  push(name: string, stage: number, bytes: number, align: number): number {
    const at = this.align(align);
    this.sheet.smem.buffers.push({ name, stage, offset: at, bytes });
    this.end = at + bytes;
    return at;
  }
}
