// One pane's link to its worker session: loading, navigation, playback and crash recovery.
// Plain TS over the zustand store, so components stay thin and several panes can each own
// a controller. All engine work happens in the worker; this file only sends requests and
// stores the frames that come back.

import { applyUpdate, type Breakpoint, type Frame, type FrameUpdate, type Granularity, type LoadRequest } from '../../engine/api.ts';
import { startDebuggerWorker, type DebuggerClient } from '../worker/client.ts';
import { TEXT_VIEW_HZ, useApp, type ErrorPlace, type PaneId } from './store.ts';

/** Errors that are about the input, not about the worker: shown, nothing restarted. */
function isInputError(e: unknown): boolean {
  const name = (e as { name?: string })?.name;
  return name === 'ProblemError' || name === 'TooLargeError' || name === 'CancelledError' || /^(\w[\w .]*): /.test(messageOf(e));
}

export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'object' && e && 'message' in e) return String((e as { message: unknown }).message);
  return String(e);
}

/**
 * The text views' frame: m and l copied, because the heatmaps' frame patches its arrays in
 * place and the text views may show an older step during playback.
 */
function textCopy(f: Frame): Frame {
  return { ...f, m: f.m.slice(), l: f.l.slice() };
}

export class PaneController {
  private client: DebuggerClient;
  /** One navigation request in flight at a time; playback skips ticks while busy. */
  private inFlight = false;
  private raf = 0;
  private lastTick = 0;
  private disposed = false;
  private restarting: Promise<void> | undefined;

  constructor(readonly pane: PaneId) {
    this.client = this.start();
  }

  private get state() {
    return useApp.getState();
  }
  private patch(p: Parameters<ReturnType<typeof useApp.getState>['patchPlayback']>[1]) {
    this.state.patchPlayback(this.pane, p);
  }

  private start(): DebuggerClient {
    return startDebuggerWorker((msg) => void this.recover('worker', `The debugger worker crashed: ${msg}`));
  }

  /** The worker's API, for views that make their own requests (the hardware schedules). */
  get worker() {
    return this.client.api;
  }

  dispose(): void {
    this.disposed = true;
    cancelAnimationFrame(this.raf);
    this.client.dispose();
  }

  /**
   * Restarts the worker and puts back what the person had: the loaded problem, the
   * breakpoints and the position. The error stays visible where it happened.
   */
  private recover(place: ErrorPlace, message: string): Promise<void> {
    if (this.disposed) return Promise.resolve();
    if (this.restarting) return this.restarting;
    this.pause();
    const step = this.state.playback[this.pane]?.frame?.step ?? 0;
    this.patch({ error: { place, message } });
    this.restarting = (async () => {
      this.client.dispose();
      this.client = this.start();
      const applied = this.state.problem[this.pane]?.applied;
      if (applied) {
        await this.client.api.load(applied);
        await this.client.api.setBreakpoints(this.state.breakpoints[this.pane] ?? []);
        const f = applyUpdate(undefined, await this.client.api.seek(step, true));
        this.patch({
          frame: f,
          textFrame: textCopy(f),
          status: 'ready',
          notice: `Worker restarted; restored step ${f.step + 1} of ${f.total}.`,
        });
      } else this.patch({ status: 'empty', notice: 'Worker restarted.' });
    })()
      .catch((e) => this.patch({ error: { place: 'worker', message: `Restarting the worker failed: ${messageOf(e)}` } }))
      .finally(() => {
        this.restarting = undefined;
        this.inFlight = false;
      });
    return this.restarting;
  }

  /** Counts loads: a load whose answer arrives after a later load began must not show its run. */
  private loadSeq = 0;

  async load(req: LoadRequest): Promise<void> {
    const seq = ++this.loadSeq;
    const stale = () => seq !== this.loadSeq;
    this.pause();
    this.patch({
      status: 'loading',
      progress: { fraction: 0, label: 'starting' },
      error: undefined,
      tooLarge: undefined,
      countersRun: undefined,
      hit: undefined,
      notice: undefined,
    });
    try {
      const summary = await this.client.api.load(
        req,
        this.client.progress((fraction, label) => this.patch({ progress: { fraction, label } })),
      );
      // A later load (a switch changed twice in quick succession) owns the pane now: its run,
      // not this one, is what the worker holds once both are answered.
      if (stale()) return;
      this.state.setApplied(this.pane, req);
      this.state.patchSelection(this.pane, { row: null, zoom: null });
      await this.client.api.setBreakpoints(this.state.breakpoints[this.pane] ?? []);
      const frame = await this.client.api.seek(0, true);
      if (stale()) return;
      // New inputs even when the shape is the same (another seed or distribution).
      this.patch({ summary, status: 'ready', progress: undefined, inputs: undefined });
      await this.show(frame);
    } catch (e) {
      if (stale()) return;
      const hasRun = !!this.state.problem[this.pane]?.applied;
      const status = hasRun ? 'ready' : 'empty';
      const name = (e as { name?: string })?.name;
      if (name === 'TooLargeError') this.patch({ status, progress: undefined, tooLarge: messageOf(e) });
      else if (name === 'CancelledError')
        this.patch({ status, progress: undefined, notice: 'Loading cancelled; the previous run is still loaded.' });
      else if (isInputError(e)) this.patch({ status, progress: undefined, error: { place: 'problem', message: messageOf(e) } });
      else await this.recover('problem', `Loading failed: ${messageOf(e)}`);
    }
  }

  async runCounters(req: LoadRequest): Promise<void> {
    const prev = this.state.playback[this.pane].status;
    this.patch({ status: 'busy', progress: { fraction: 0, label: 'counting' }, countersRun: undefined });
    try {
      const r = await this.client.api.runCounters(
        req,
        this.client.progress((fraction, label) => this.patch({ progress: { fraction, label } })),
      );
      this.patch({ countersRun: r, status: prev === 'busy' ? 'ready' : prev, progress: undefined });
    } catch (e) {
      this.patch({ status: prev, progress: undefined, error: { place: 'problem', message: messageOf(e) } });
    }
  }

  cancel(): void {
    void this.client.api.cancel();
  }

  private lastText = 0;

  /** Applies an update to the pane's frame, fetching the head's Q/K/V first when the head changed. */
  private async show(update: FrameUpdate): Promise<Frame> {
    const pb = this.state.playback[this.pane];
    const frame = applyUpdate(update.patch.full ? undefined : pb.frame, update);
    const now = performance.now();
    const text = !pb.playing || frame.hit || frame.step >= frame.total - 1 || now - this.lastText >= 1000 / TEXT_VIEW_HZ;
    if (text) this.lastText = now;
    const patch = text ? { frame, textFrame: textCopy(frame), hit: frame.hit } : { frame, hit: frame.hit };
    const inputs = pb.inputs;
    if (
      !inputs ||
      inputs.b !== frame.b ||
      inputs.h !== frame.h ||
      inputs.nq !== frame.nq ||
      inputs.nk !== frame.nk ||
      inputs.dv !== frame.dv
    ) {
      const fresh = await this.client.api.headInputs(frame.b, frame.h);
      this.patch({ ...patch, inputs: fresh });
    } else this.patch(patch);
    return frame;
  }

  /**
   * Moves asked for while a request is in flight are queued, not dropped (key repeat, quick
   * clicks): consecutive steps of one granularity merge, a seek replaces what was queued.
   */
  private queued: { kind: 'step'; delta: number; g: Granularity } | { kind: 'seek'; k: number } | null = null;

  private async navigate(call: () => Promise<FrameUpdate>): Promise<Frame | undefined> {
    if (this.restarting || this.state.playback[this.pane]?.status !== 'ready') return undefined;
    this.inFlight = true;
    try {
      return await this.show(await call());
    } catch (e) {
      this.queued = null;
      await this.recover('transport', `Step failed: ${messageOf(e)}`);
      return undefined;
    } finally {
      this.inFlight = false;
      const q = this.queued;
      this.queued = null;
      if (q && !this.restarting) void (q.kind === 'step' ? this.step(q.delta, q.g) : this.seek(q.k));
    }
  }

  step(delta: number, granularity?: Granularity): Promise<Frame | undefined> {
    const g = granularity ?? this.state.playback[this.pane].granularity;
    if (this.inFlight) {
      const q = this.queued;
      this.queued = q && q.kind === 'step' && q.g === g ? { ...q, delta: q.delta + delta } : { kind: 'step', delta, g };
      return Promise.resolve(undefined);
    }
    return this.navigate(() => this.client.api.step(delta, g));
  }

  seek(k: number): Promise<Frame | undefined> {
    if (this.inFlight) {
      this.queued = { kind: 'seek', k };
      return Promise.resolve(undefined);
    }
    return this.navigate(() => this.client.api.seek(k));
  }

  async runToBreakpoint(): Promise<void> {
    this.pause();
    if (this.state.playback[this.pane]?.status !== 'ready') return;
    this.patch({ status: 'busy' });
    try {
      const f = await this.client.api.runToBreakpoint(
        this.client.progress((fraction, label) => this.patch({ progress: { fraction, label } })),
      );
      this.patch({ status: 'ready', progress: undefined });
      await this.show(f);
    } catch (e) {
      this.patch({ status: 'ready', progress: undefined });
      await this.recover('breakpoints', `Run to breakpoint failed: ${messageOf(e)}`);
    }
  }

  async setBreakpoints(list: Breakpoint[]): Promise<void> {
    this.state.setBreakpointList(this.pane, list);
    try {
      await this.client.api.setBreakpoints(list);
    } catch (e) {
      await this.recover('breakpoints', `Setting breakpoints failed: ${messageOf(e)}`);
    }
  }

  play(): void {
    const pb = this.state.playback[this.pane];
    if (pb.status !== 'ready' || pb.playing) return;
    if (pb.frame && pb.frame.step >= pb.frame.total - 1) return;
    this.patch({ playing: true, hit: undefined });
    this.lastTick = 0;
    const tick = (now: number) => {
      if (this.disposed || !this.state.playback[this.pane].playing) return;
      this.raf = requestAnimationFrame(tick);
      const { speed } = this.state.playback[this.pane];
      if (this.inFlight) return;
      if (speed > 0 && now - this.lastTick < 1000 / speed) return;
      this.lastTick = now;
      void this.step(1).then((f) => {
        if (f && (f.hit || f.step >= f.total - 1)) this.pause();
      });
    };
    this.raf = requestAnimationFrame(tick);
  }

  pause(): void {
    cancelAnimationFrame(this.raf);
    const pb = this.state.playback[this.pane];
    if (pb?.playing) this.patch({ playing: false, textFrame: pb.frame && textCopy(pb.frame) });
  }

  /** The worker's API, for features that add calls of their own (compare, export). */
  get api(): DebuggerClient['api'] {
    return this.client.api;
  }

  /** A move through a call that returns the new frame (compare mode's synchronised seek), queued like step/seek. */
  moveWith(call: (api: DebuggerClient['api']) => Promise<FrameUpdate>): Promise<Frame | undefined> {
    if (this.inFlight) return Promise.resolve(undefined);
    return this.navigate(() => call(this.client.api));
  }

  dismissError(): void {
    this.patch({ error: undefined, notice: undefined });
  }
}
