// `npm run bench:debugger`: time travel cost of the debugger session, in Node, with the very
// code the worker runs. FA2, N = 512, d = 64. Goals: single step <= 2 ms,
// seek to a random step p95 <= 30 ms; memory of the whole run is reported.
// Each timed call includes building the Frame (the copies the worker would transfer).

import { DebuggerSession } from './session.ts';
import type { LoadRequest } from '../request.ts';
import { BUILT_IN_ALGORITHMS } from '../algorithms/registry.ts';

const N = Number(process.env.BENCH_N ?? 512);
const req: LoadRequest = {
  algorithm: BUILT_IN_ALGORITHMS.fa2.id,
  problem: { batch: 1, hq: 1, hk: 1, nq: N, nk: N, d: 64, dv: 64, causal: false, dtype: 'fp32' },
  seed: 1,
  distribution: 'normal',
  blocks: {},
};

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}
const gc = (globalThis as { gc?: () => void }).gc;
const heap = () => {
  gc?.();
  return process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
};

const s = new DebuggerSession();
const before = heap();
const summary = await s.load(req);
const after = heap();
const total = summary.total;

// Deterministic: a second session with the same request records the same trace.
const s2 = new DebuggerSession();
await s2.load(req);
const same = JSON.stringify(s.events()) === JSON.stringify(s2.events());

// Wall time, and the process's CPU time (user + system) for the same call: on a shared
// machine the wall time also counts the time other jobs held the CPU, the CPU time does not.
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
async function timed(fn: () => Promise<unknown>, wall: number[], cpu: number[]): Promise<void> {
  const c = cpuMs();
  const t = performance.now();
  await fn();
  wall.push(performance.now() - t);
  cpu.push(cpuMs() - c);
}
const fwd: number[] = [];
const fwdCpu: number[] = [];
for (let i = 0; i < Math.min(3000, total - 1); i++) await timed(() => s.step(1, 'phase'), fwd, fwdCpu);
const back: number[] = [];
const backCpu: number[] = [];
for (let i = 0; i < 500; i++) await timed(() => s.step(-1, 'phase'), back, backCpu);
// Seeded LCG for the random targets, so runs are comparable.
let x = 12345;
const rnd = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
const seek: number[] = [];
const seekCpu: number[] = [];
for (let i = 0; i < 300; i++) {
  const k = Math.floor(rnd() * total);
  await timed(() => s.seek(k), seek, seekCpu);
}
const f = (v: number) => v.toFixed(3);
const mb = (b: number) => (b / 2 ** 20).toFixed(1);
console.log(`debugger session bench: FA2 N=${N} d=64, blocks ${summary.blocks.blockM}x${summary.blocks.blockN}, ${total} steps`);
console.log(`load (record trace + checkpoints every ${summary.checkpointInterval} steps): ${summary.loadMs.toFixed(0)} ms`);
console.log(
  `memory: session estimate ${mb(summary.memoryBytes)} MiB, measured heap+buffers delta ${gc ? mb(after - before) + ' MiB' : 'n/a (run with --expose-gc)'}`,
);
console.log(`deterministic (two loads, identical traces): ${same}`);
console.log(
  `step forward  (${fwd.length}): p50 ${f(pct(fwd, 0.5))} ms, p95 ${f(pct(fwd, 0.95))} ms, max ${f(Math.max(...fwd))} ms  (goal <= 2 ms; p95/goal = ${f(pct(fwd, 0.95) / 2)})`,
);
console.log(
  `step back     (${back.length}): p50 ${f(pct(back, 0.5))} ms, p95 ${f(pct(back, 0.95))} ms, max ${f(Math.max(...back))} ms  (goal <= 2 ms; p95/goal = ${f(pct(back, 0.95) / 2)})`,
);
console.log(
  `seek random   (${seek.length}): p50 ${f(pct(seek, 0.5))} ms, p95 ${f(pct(seek, 0.95))} ms, max ${f(Math.max(...seek))} ms  (goal p95 <= 30 ms; p95/goal = ${f(pct(seek, 0.95) / 30)})`,
);
const cpuLine = (name: string, xs: number[], goal: number) =>
  console.log(`${name} CPU time: p50 ${f(pct(xs, 0.5))} ms, p95 ${f(pct(xs, 0.95))} ms  (p95/goal = ${f(pct(xs, 0.95) / goal)})`);
cpuLine('step forward ', fwdCpu, 2);
cpuLine('step back    ', backCpu, 2);
cpuLine('seek random  ', seekCpu, 30);
const os = await import('node:os');
console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(2)} (1 min), Node ${process.version}`);
if (!same) process.exitCode = 1;
