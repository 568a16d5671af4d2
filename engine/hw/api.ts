// The hardware views' part of the debugger worker's RPC (protocol.ts's DebuggerApi extends
// it). The worker builds the schedule of the SM that runs the current step's CTA from the
// session's recorded trace, so the main thread never runs the scheduler.

import type { HwView, HwViewRequest } from './sm-view.ts';

export type HwExportFormat = 'chrome' | 'jsonl';

export interface HwExport {
  filename: string;
  mime: string;
  text: string;
}

export interface HardwareApi {
  /** Schedule, memory intervals and step ↔ cycle map of the SM running step `req.step`'s CTA. Rejects with a message when the kernel does not fit or does not exist for the GPU. */
  hwView(req: HwViewRequest): Promise<HwView>;
  /** The last schedule hwView built, as Chrome Trace Event JSON or JSONL. */
  hwExport(format: HwExportFormat): Promise<HwExport>;
}
