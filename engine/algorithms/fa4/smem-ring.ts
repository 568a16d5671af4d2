// A ring of SMEM slots as a kernel's producer/consumer pipelines use it: a full and an empty
// barrier per slot, the producer taking slots in turn and waiting until a slot's previous use was
// released, the release freeing what that use filled (FA4's backward rings, ./backward-schedule.ts).

import type { Kernel, MemSpec, RoleProgram } from '../../hw/scheduler.ts';

/** A ring of SMEM slots with full/empty barriers; several tensors may share one (d = 192: Q then Qᵀ in sQ). */
export class Ring {
  private readonly full: number[] = [];
  private readonly empty: number[] = [];
  private readonly uses: number[];
  private readonly frees: MemSpec[][][];
  constructor(k: Kernel, name: string, slots: number, consumers: number) {
    this.uses = new Array<number>(slots).fill(0);
    this.frees = Array.from({ length: slots }, () => []);
    for (let s = 0; s < slots; s++) {
      this.full.push(k.mbarrier(`${name}_full[${s}]`));
      this.empty.push(k.mbarrier(`${name}_empty[${s}]`, consumers, (ph) => this.frees[s][ph] ?? null));
    }
  }
  /** The producer's next slot, in turn: it waits until the slot's previous use was released; `frees` names what the release frees. */
  produce(role: RoleProgram, frees: (slot: number) => MemSpec[]): Slot {
    const total = this.uses.reduce((a, b) => a + b, 0);
    const slot = total % this.uses.length;
    const use = this.uses[slot]++;
    this.frees[slot].push(frees(slot));
    role.wait(this.empty[slot], use - 1);
    return { slot, use, full: this.full[slot], empty: this.empty[slot] };
  }
}

export interface Slot {
  slot: number;
  use: number;
  full: number;
  empty: number;
}
