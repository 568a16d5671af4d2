// The debugger's Web Worker: one DebuggerSession behind Comlink. Frames are returned with
// their typed-array buffers transferred, so the main thread receives them without a copy.

import * as Comlink from 'comlink';
import type {
  DebuggerApi,
  FrameUpdate,
  Granularity,
  HeadInputs,
  Progress,
  Breakpoint,
  LoadRequest,
  HwView,
  HwExportFormat,
} from '../../engine/api.ts';
import {
  DebuggerSession,
  chromeTrace,
  scheduleJsonl,
  smScheduleFor,
  type HwViewRequest,
  type SmSchedule,
  backwardBuffers,
} from '../../engine/api-worker.ts';

const session = new DebuggerSession();
/** The schedule the hardware views show now (kept for export). */
let hwLast: SmSchedule | undefined;

const sendView = (v: HwView): HwView => {
  const t = v.timeline;
  const m = v.map;
  return Comlink.transfer(
    v,
    [t.start, t.end, t.role, t.unit, t.op, t.tile, t.async, t.depStart, t.deps, m.stepCycle, m.stepOp, m.stepApprox, m.opStep].map(
      (a) => a.buffer,
    ) as ArrayBuffer[],
  );
};

/** The buffers of a frame update, handed over to the main thread without a copy. */
const frameBuffers = (f: FrameUpdate): ArrayBuffer[] => {
  const x = f.patch;
  return [
    ...([x.s.buffer, x.p.buffer, x.mask.buffer, x.o.buffer, x.oState.buffer, x.m.buffer, x.l.buffer] as ArrayBuffer[]),
    ...(x.bwd ? backwardBuffers(x.bwd) : []),
  ];
};

const sendFrame = (f: FrameUpdate): FrameUpdate => Comlink.transfer(f, frameBuffers(f));

const api: DebuggerApi = {
  load: (req: LoadRequest, onProgress?: Progress) => session.load(req, onProgress),
  step: async (delta: number, g: Granularity) => sendFrame(await session.step(delta, g)),
  seek: async (k: number, full?: boolean) => sendFrame(await session.seek(k, full)),
  runToBreakpoint: async (onProgress?: Progress) => sendFrame(await session.runToBreakpoint(onProgress)),
  setBreakpoints: (bps: Breakpoint[]) => session.setBreakpoints(bps),
  headInputs: async (b: number, h: number) => {
    const x: HeadInputs = await session.headInputs(b, h);
    const extra = [x.dO, x.pForward].filter((a): a is Float32Array => !!a).map((a) => a.buffer);
    return Comlink.transfer(x, [x.q.buffer, x.k.buffer, x.v.buffer, ...extra] as ArrayBuffer[]);
  },
  runCounters: (req: LoadRequest, onProgress?: Progress) => session.runCounters(req, onProgress),
  cancel: () => session.cancel(),
  hwView: async (req: HwViewRequest) => {
    hwLast = smScheduleFor(session.hwViewRequest(req), session.events());
    // The view's typed arrays are transferred: hand over copies so the kept schedule stays whole.
    return sendView(structuredClone(hwLast.view));
  },
  hwExport: async (format: HwExportFormat) => {
    if (!hwLast) throw new Error('no hardware schedule has been built yet');
    const v = hwLast.view;
    const base = `flashscope-${v.algo}${v.pass === 'backward' ? '-backward' : ''}-${v.gpu}-sm`;
    return format === 'chrome'
      ? { filename: `${base}.trace.json`, mime: 'application/json', text: JSON.stringify(chromeTrace(hwLast)) }
      : { filename: `${base}.jsonl`, mime: 'application/x-ndjson', text: scheduleJsonl(hwLast) };
  },
  compareData: async (gpu: string) => {
    const d = await session.compareData(gpu);
    return Comlink.transfer(d, [d.output.buffer as ArrayBuffer]);
  },
  syncPoint: (gpu: string) => session.syncPoint(gpu),
  seekSync: async (point, axis, gpu) => {
    const { frame: f, used } = await session.seekSync(point, axis, gpu);
    return Comlink.transfer({ frame: f, used }, frameBuffers(f));
  },
  precisionMarks: async (b: number, h: number) => {
    const m = await session.precisionMarks(b, h);
    return Comlink.transfer(m, [m.flushedAt.buffer as ArrayBuffer]);
  },
  precision: async (b: number, h: number) => {
    const r = await session.precision(b, h);
    if (!r.ok) return r;
    const x = r.head;
    return Comlink.transfer(
      r,
      [x.flushedAt, x.oErr, x.sErr, x.pErr, x.s64, x.p64, r.run.castSteps, r.run.castFlushed].map((a) => a.buffer as ArrayBuffer),
    );
  },
  traceJsonl: () => session.traceJsonl(),
};

Comlink.expose(api);
