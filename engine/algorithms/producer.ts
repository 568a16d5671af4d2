// The load side of a warp-specialized kernel (FA3's producer warp, FA4's load warp): a
// queue of copies issued in program order, each into a ring of shared-memory stages. A
// copy is issued as soon as its ring has a free stage, so loads appear in the trace ahead
// of the math that consumes them — as far ahead as the pipeline depth allows, never more.
// Consumers release stages in order when they are done reading them.

import type { TraceEvent } from '../trace/events.ts';

type Gen = Generator<TraceEvent, void, void>;

interface Op {
  key: string;
  /** Ring index, or -1 for a copy that needs no stage (e.g. Q into its own buffer). */
  ring: number;
  issue: () => Gen;
}

export class Producer {
  private readonly ops: Op[] = [];
  private next = 0;
  private readonly inUse: number[];
  private readonly issued = new Set<string>();

  constructor(private readonly stages: number[]) {
    this.inUse = stages.map(() => 0);
  }

  push(key: string, ring: number, issue: () => Gen): void {
    this.ops.push({ key, ring, issue });
  }

  /** Issues every queued copy that has a free stage, in program order (a blocked copy blocks the ones after it). */
  *pump(): Gen {
    while (this.next < this.ops.length) {
      const op = this.ops[this.next];
      if (op.ring >= 0 && this.inUse[op.ring] >= this.stages[op.ring]) return;
      if (op.ring >= 0) this.inUse[op.ring]++;
      this.issued.add(op.key);
      this.next++;
      yield* op.issue();
    }
  }

  /** The consumer waits for `key`: issue what can be issued; the copy must be out by then. */
  *wait(key: string): Gen {
    yield* this.pump();
    if (!this.issued.has(key)) {
      // Would be a deadlock on the GPU: the consumer waits for a copy whose stage it still holds.
      throw new Error(`pipeline model: '${key}' waited for before it could be issued`);
    }
  }

  /** A consumer finished reading the oldest stage of `ring`. */
  release(ring: number): void {
    if (this.inUse[ring] > 0) this.inUse[ring]--;
  }
}
