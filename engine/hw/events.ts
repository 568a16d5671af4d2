// Hardware events: what the discrete-event scheduler (scheduler.ts) produces for one
// kernel schedule. Plain JSON-able data so it crosses postMessage and JSONL unchanged.
// engine/TRACE.md, section "Hardware events", is the prose contract; keep the two in step.

import type { PhaseKind } from '../trace/events.ts';

/** Execution units a role can occupy or issue to. Sub-partition units carry their index (tensor.sp2). */
export type UnitKind = 'tma' | 'cpasync' | 'ldgsts' | 'tensor' | 'mufu' | 'fma' | 'tmem' | 'smem' | 'store' | 'sync';

/** A role: one warp, or a warpgroup of four, with a fixed job in the kernel. */
export interface RoleInfo {
  /** e.g. "producer", "consumer0", "softmax1", "mma", "warp2"; CTA-qualified as "cta1/warp2" when several CTAs share an SM. */
  name: string;
  /** Warp ids within the CTA. */
  warps: number[];
  /** Registers per thread this role runs with (setmaxnreg, or the compiler's count). */
  registers: number;
  /** One line on what the role does. */
  job: string;
}

/** One interval of a role's life: work it did on a unit, or time it stalled on a barrier. */
export interface TimelineEvent {
  /** Unique, increasing in the order the scheduler created the events. */
  id: number;
  role: string;
  /** What happened, e.g. "tma K3", "gemm0 S=QK^T", "exp2", "wait full_K[1]". */
  op: string;
  /** The unit the work ran on ("tensor", "mufu", "tensor.sp1" ...), "sync" for a stall on a barrier. */
  unit: string;
  /** Cycles (SM clock) from the CTA's start. For async work: issue to completion. */
  start: number;
  end: number;
  /** Tile the op works on: "Q0", "K3", "S1", "P1", "O0" ... ("" when none). */
  tile: string;
  /** Ids of the events whose completion released the barriers this role waited on before this event. */
  waitedOn: number[];
  /** True for work issued asynchronously (the role moved on while it ran). */
  async?: boolean;
  /** What the op carries out in the numeric trace's terms (the step map reads this; `op` is display only). */
  phase?: SchedulePhase;
}

/** An op's part in the algorithm: the phase kinds it carries out, its K/V block (backward: row block), its sub-unit, the tensors it moves. */
export interface SchedulePhase {
  kinds: PhaseKind[];
  /** K/V block index (backward schedules: the row block), null when the op concerns none (Q load, epilogue). */
  kv: number | null;
  /** Sub-unit (FA4 Q stage, FA3 consumer warpgroup, a warp of the SM80-style kernels), null when the op serves the whole CTA. */
  sub: number | null;
  /** Last sub-unit the op serves when it serves several (a cta_group::2 MMA: Q tiles of both CTAs of a pair); absent: only `sub`. */
  subEnd?: number;
  /** Tensors a copy moves ("Q", "K", "V", "O", …). */
  tensors?: string[];
}

export type MemorySpace = 'smem' | 'tmem' | 'regs' | 'hbm';
export type MemoryAction = 'alloc' | 'fill' | 'release';

/** One change to on-chip (or HBM) storage. */
export interface MemoryEvent {
  /** Cycle of the action. For 'fill' it is when the write starts (the region is in use from here). */
  t: number;
  /** For 'fill': the cycle the data is complete and may be read. */
  ready?: number;
  space: MemorySpace;
  /** Buffer name from the resource sheet, e.g. "sK", "tmem.S0", "regs.acc_o". */
  buffer: string;
  /** Pipeline stage (ring slot), 0 when the buffer has one. */
  stage: number;
  /** Byte offset in SMEM; for TMEM, the first column (bytes then counts columns × 4 × lanes). */
  offset: number;
  bytes: number;
  action: MemoryAction;
  /** Tile it holds ("Q0", "K3", "V3", "S1", "P1", "O0"); "" for alloc. */
  tile: string;
  /** Role that caused it. */
  role: string;
}

export interface SmemBuffer {
  name: string;
  stage: number;
  offset: number;
  bytes: number;
}
export interface TmemBuffer {
  name: string;
  /** First 32-bit column. */
  column: number;
  columns: number;
}

/** What one CTA of the kernel needs, and what the GPU offers. */
export interface ResourceSheet {
  algo: string;
  gpu: string;
  smem: { capacity_bytes: number; used_bytes: number; buffers: SmemBuffer[] };
  tmem: { lanes: number; columns: number; used_columns: number; buffers: TmemBuffer[] } | null;
  /**
   * Warp roles. Consumer warpgroups (FA3's MMA warpgroups, FA4's softmax warpgroups, one per Q
   * stage) are named consumer0…N−1; `kernel_name` keeps the kernel's own name where it differs.
   */
  roles: { name: string; warps: number[]; registers: number; kernel_name?: string }[];
  registers: { per_sm: number; used: number };
  tiles: { block_m: number; block_n: number };
  q_stage: number;
  kv_stage: number;
  /** FA4: 2 when the kernel runs CTA pairs with cta_group::2 MMAs (use_2cta_instrs), else 1. */
  cta_group?: 1 | 2;
  /** CTAs that fit on one SM at once (smem, registers, threads). */
  ctas_per_sm: number;
  /** flash-decoding: K/V splits per (batch, head, Q tile). */
  splits?: number;
  /** Empty when it fits; otherwise one line per resource that does not, with need and capacity. */
  does_not_fit: string[];
  /** The configuration upstream's dispatch picks for this problem, and the upstream lines deciding each part. */
  upstream?: { config: Record<string, number | string | boolean>; why: string[] };
  notes: string[];
}

export interface UnitUtilization {
  /** Busy fraction of the unit over the kernel's time, 0..1. */
  [unit: string]: number;
}
