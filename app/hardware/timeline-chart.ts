// The warp-role timeline, drawn imperatively on canvases (React only mounts it): one lane
// per role, ops as bars coloured by unit, barrier waits as thin grey bars, async work
// (issue → completion) in the lower part of its lane. d3-zoom pans and zooms the time axis,
// a d3 brush on the overview strip selects a window, hovering an op draws arrows from the
// ops whose completion released it, a click seeks the debugger to that op's step.
// Two layers: the ops (redrawn only when the window or the data change) and an overlay
// with the cursor and hover (redrawn on every debugger step, cheaply). Each piece of work
// is recorded as a User Timing measure ("flashscope:timeline-…") for profiling and for
// bench:hwviews.

import {
  brushX,
  scaleLinear,
  select,
  zoom,
  zoomIdentity,
  type BrushBehavior,
  type ScaleLinear,
  type ZoomBehavior,
  type ZoomTransform,
} from 'd3';
import type { HwView } from '../../engine/api.ts';
import { familyColour, UNIT_FAMILIES, unitFamily } from './palette.ts';
import { axisTickCount, tickLabel, tickLabelXs, timelineFontPx } from './timeline-axis.ts';

const LANE_H = 24;
const LABEL_W = 118;
const OVERVIEW_H = 34;

export interface ChartCallbacks {
  onSeek(op: number, cycle: number): void;
  onWindow(window: [number, number], utilization: Record<string, number>): void;
}

export class TimelineChart {
  private base: HTMLCanvasElement;
  private over: HTMLCanvasElement;
  private overview: HTMLCanvasElement;
  private brushSvg: SVGSVGElement;
  private brushG: SVGGElement;
  private tip: HTMLDivElement;
  /** What the keyboard's op is, for screen readers (the tip is drawn for the eye). */
  private live: HTMLDivElement;
  private view: HwView | undefined;
  private lanes: number[] = [];
  private laneOf = new Int32Array(0);
  /** Lane of each op: its role's, or the copy-engine lane for async copies of kernels without a load role. */
  private opLane = new Int32Array(0);
  /** 1 for a cta_group::2 MMA of a CTA pair: drawn down through the peer's mma lane below the leader's. */
  private spansPair = new Uint8Array(0);
  private family: string[] = [];
  private width = 600;
  private font = timelineFontPx(600);
  private x0: ScaleLinear<number, number> = scaleLinear();
  private x: ScaleLinear<number, number> = scaleLinear();
  private zoomer: ZoomBehavior<HTMLCanvasElement, unknown>;
  private brusher: BrushBehavior<unknown>;
  private transform: ZoomTransform = zoomIdentity;
  private cursor: number | null = null;
  private cursorOp = -1;
  private hover = -1;
  /** Op indices by start cycle, for the keyboard's walk through them. */
  private byStart: Int32Array | null = null;
  private raf = 0;
  /** Theme colours, read from CSS when the ops are drawn (never per step: getComputedStyle forces a style pass). */
  private colours = { text: '#ccc', dim: '#888', border: '#333', hl: '#ffd400', err: '#f66' };
  private syncing = false;
  private ro: ResizeObserver;
  follow = true;

  constructor(
    private root: HTMLDivElement,
    private cb: ChartCallbacks,
  ) {
    root.innerHTML = '';
    const stack = document.createElement('div');
    stack.className = 'tl-stack';
    this.base = document.createElement('canvas');
    this.over = document.createElement('canvas');
    this.over.className = 'tl-over';
    this.over.tabIndex = 0;
    this.over.setAttribute('role', 'img');
    this.over.setAttribute(
      'aria-label',
      'Warp-role timeline: scroll or + / − / 0 to zoom, drag or Shift+arrow keys to pan, click an op or pick one with the arrow keys and press Enter to seek the debugger there',
    );
    this.over.dataset.testid = 'timeline-canvas';
    stack.append(this.base, this.over);
    this.tip = document.createElement('div');
    this.tip.className = 'tl-tip';
    this.tip.hidden = true;
    stack.append(this.tip);
    this.live = document.createElement('div');
    this.live.className = 'sr-only';
    this.live.setAttribute('aria-live', 'polite');
    stack.append(this.live);
    const ov = document.createElement('div');
    ov.className = 'tl-overview';
    this.overview = document.createElement('canvas');
    this.brushSvg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    this.brushSvg.setAttribute('aria-label', 'Overview: drag to select the window shown above');
    this.brushG = document.createElementNS('http://www.w3.org/2000/svg', 'g');
    this.brushSvg.append(this.brushG);
    ov.append(this.overview, this.brushSvg);
    root.append(stack, ov);

    this.zoomer = zoom<HTMLCanvasElement, unknown>()
      .scaleExtent([1, 1e6])
      .on('zoom', (e: { transform: ZoomTransform }) => {
        this.transform = e.transform;
        this.x = e.transform.rescaleX(this.x0);
        this.schedule();
        this.syncBrush();
      })
      .on('end', () => this.reportWindow());
    select(this.over).call(this.zoomer).on('dblclick.zoom', null);
    this.brusher = brushX<unknown>().on('end', (e: { selection: [number, number] | null; sourceEvent?: unknown }) => {
      if (this.syncing || !e.sourceEvent || !e.selection) return;
      const [a, b] = e.selection;
      if (b - a < 2) return;
      const k = (this.width - LABEL_W) / (b - a);
      select(this.over).call(this.zoomer.transform, zoomIdentity.translate(LABEL_W - k * a, 0).scale(k));
    });
    select(this.brushG).call(this.brusher);

    this.over.addEventListener('mousemove', (e) => this.onMove(e));
    this.over.addEventListener('mouseleave', () => {
      this.hover = -1;
      this.tip.hidden = true;
      this.drawOverlay();
    });
    this.over.addEventListener('click', (e) => {
      if (!this.view) return;
      const { op, cycle } = this.hit(e);
      this.cb.onSeek(op, cycle);
    });
    this.over.addEventListener('keydown', (e) => {
      const pan = (this.width - LABEL_W) / 4 / this.transform.k;
      if (e.key === '+' || e.key === '=') this.zoomBy(2);
      else if (e.key === '-') this.zoomBy(0.5);
      else if (e.key === '0') this.fit();
      else if ((e.key === 'ArrowLeft' || e.key === 'ArrowRight') && e.shiftKey)
        select(this.over).call(this.zoomer.translateBy, e.key === 'ArrowLeft' ? pan : -pan, 0);
      else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') this.keyOp(e.key === 'ArrowRight' ? 1 : -1);
      else if (e.key === 'Enter' && this.hover >= 0) this.cb.onSeek(this.hover, this.view!.timeline.start[this.hover]);
      else return;
      // The debugger's own arrow keys step it; here they belong to the timeline.
      e.preventDefault();
      e.stopPropagation();
    });
    this.over.addEventListener('blur', () => {
      this.hover = -1;
      this.tip.hidden = true;
      this.drawOverlay();
    });
    this.ro = new ResizeObserver(() => this.resize());
    this.ro.observe(root);
    this.resize();
  }

  destroy(): void {
    this.ro.disconnect();
    cancelAnimationFrame(this.raf);
    select(this.over).on('.zoom', null);
    this.root.innerHTML = '';
  }

  setData(view: HwView, keepWindow: [number, number] | undefined): void {
    const t0 = performance.now();
    this.view = view;
    this.byStart = null;
    const t = view.timeline;
    const used = new Set<number>();
    for (let i = 0; i < t.count; i++) used.add(t.role[i]);
    // A CTA pair: the peer's MMA warp issues nothing, but its lane shows the leader's MMAs reaching its SM.
    const leaderMma = view.roles.findIndex((r) => /(^|\/)leader\/mma$/.test(r.name));
    const peerMma = view.roles.findIndex((r) => /(^|\/)peer\/mma$/.test(r.name));
    if (leaderMma >= 0 && peerMma === leaderMma + 1) used.add(peerMma);
    this.lanes = view.roles.map((_, i) => i).filter((i) => used.has(i));
    this.laneOf = new Int32Array(view.roles.length).fill(-1);
    this.lanes.forEach((r, l) => (this.laneOf[r] = l));
    this.family = t.strings.map((s) => unitFamily(s));
    this.spansPair = new Uint8Array(t.count);
    if (peerMma === leaderMma + 1 && leaderMma >= 0)
      for (let i = 0; i < t.count; i++) this.spansPair[i] = t.role[i] === leaderMma && this.family[t.unit[i]] === 'tensor' ? 1 : 0;
    // Kernels without warp specialization (fmha_v2, CuTe, decoding) have every warp issue
    // its share of the copies; their in-flight copies get a lane of their own, the copy
    // engine, so loads and compute read as two streams like on the specialized kernels.
    const hasLoadRole = view.roles.some((r) => /(^|\/)(load|producer)$/.test(r.name));
    const copyLane = hasLoadRole ? -1 : this.lanes.length;
    this.opLane = new Int32Array(t.count);
    let copies = 0;
    for (let i = 0; i < t.count; i++) {
      const isCopy = copyLane >= 0 && t.async[i] === 1 && this.family[t.unit[i]] === 'copy';
      this.opLane[i] = isCopy ? copyLane : this.laneOf[t.role[i]];
      copies += isCopy ? 1 : 0;
    }
    if (copies > 0) this.lanes.push(-1);
    this.over.dataset.lanes = String(this.lanes.length);
    this.over.dataset.ops = String(t.count);
    this.over.dataset.cycles = String(Math.round(view.cycles));
    this.layout();
    if (keepWindow) this.showWindow(keepWindow);
    else this.fit();
    this.drawOverview();
    performance.measure('flashscope:timeline-data', { start: t0, end: performance.now() });
  }

  setCursor(cycle: number | null, op: number): void {
    this.cursor = cycle;
    this.cursorOp = op;
    if (cycle !== null && this.follow && this.view) {
      const px = this.x(cycle);
      if (px < LABEL_W || px > this.width - 4) {
        const [a, b] = this.x.domain();
        const span = b - a;
        const start = Math.max(0, Math.min(this.view.cycles - span, cycle - span * 0.25));
        this.showWindow([start, start + span]);
      }
    }
    this.drawOverlay();
  }

  /** Draws everything again (after a theme change: colours come from CSS). */
  redraw(): void {
    this.drawOverview();
    this.schedule();
  }

  fit(): void {
    select(this.over).call(this.zoomer.transform, zoomIdentity);
  }

  private zoomBy(f: number): void {
    select(this.over).call(this.zoomer.scaleBy, f, [this.cursor !== null ? this.x(this.cursor) : (LABEL_W + this.width) / 2, 0]);
  }

  private showWindow([a, b]: [number, number]): void {
    const pa = this.x0(a);
    const pb = this.x0(b);
    if (!(pb - pa > 0)) return;
    const k = (this.width - LABEL_W) / (pb - pa);
    select(this.over).call(this.zoomer.transform, zoomIdentity.translate(LABEL_W - k * pa, 0).scale(k));
  }

  private get height(): number {
    // The axis row: its tick marks, its labels and a margin below them.
    return this.lanes.length * LANE_H + this.font.axis + 12;
  }

  private resize(): void {
    this.width = Math.max(300, this.root.clientWidth);
    this.font = timelineFontPx(this.width);
    this.over.dataset.axisFontPx = String(this.font.axis);
    this.layout();
  }

  private layout(): void {
    const dpr = window.devicePixelRatio || 1;
    for (const [c, h] of [
      [this.base, this.height],
      [this.over, this.height],
      [this.overview, OVERVIEW_H],
    ] as const) {
      c.width = Math.round(this.width * dpr);
      c.height = Math.round(h * dpr);
      c.style.width = `${this.width}px`;
      c.style.height = `${h}px`;
      c.getContext('2d')!.setTransform(dpr, 0, 0, dpr, 0, 0);
    }
    this.brushSvg.setAttribute('width', String(this.width));
    this.brushSvg.setAttribute('height', String(OVERVIEW_H));
    this.x0 = scaleLinear()
      .domain([0, this.view?.cycles || 1])
      .range([LABEL_W, this.width - 4]);
    this.x = this.transform.rescaleX(this.x0);
    this.zoomer.extent([
      [LABEL_W, 0],
      [this.width - 4, this.height],
    ]);
    this.zoomer.translateExtent([
      [LABEL_W, 0],
      [this.width - 4, this.height],
    ]);
    this.brusher.extent([
      [LABEL_W, 0],
      [this.width - 4, OVERVIEW_H],
    ]);
    select(this.brushG).call(this.brusher);
    this.drawOverview();
    this.schedule();
  }

  private schedule(): void {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.drawBase();
      this.drawOverlay();
    });
  }

  private drawBase(): void {
    const t0 = performance.now();
    this.paintBase();
    performance.measure('flashscope:timeline-ops', { start: t0, end: performance.now() });
  }

  private paintBase(): void {
    const ctx = this.base.getContext('2d')!;
    ctx.clearRect(0, 0, this.width, this.height);
    const v = this.view;
    if (!v) return;
    const t = v.timeline;
    const css = getComputedStyle(this.root);
    const read = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
    this.colours = {
      text: read('--text', '#ccc'),
      dim: read('--dim', '#888'),
      border: read('--border', '#333'),
      hl: read('--hl', '#ffd400'),
      err: read('--err', '#f66'),
    };
    const { text, dim, border } = this.colours;
    this.lanes.forEach((r, l) => {
      if (l % 2) {
        ctx.fillStyle = border;
        ctx.globalAlpha = 0.25;
        ctx.fillRect(LABEL_W, l * LANE_H, this.width - LABEL_W, LANE_H);
        ctx.globalAlpha = 1;
      }
      ctx.fillStyle = text;
      ctx.font = `${this.font.lane}px system-ui, sans-serif`;
      ctx.fillText(r < 0 ? 'copy engine' : v.roles[r].name, 4, l * LANE_H + 15, LABEL_W - 8);
    });
    const [d0, d1] = this.x.domain();
    this.over.dataset.window = `${Math.round(d0)},${Math.round(d1)}`;
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, 0, this.width - LABEL_W, this.height);
    ctx.clip();
    // One pass per unit family, so the fill style is set six times, not once per op; ops
    // narrower than a pixel that land on a pixel already drawn in their lane are skipped.
    const lastPx = new Float64Array(this.lanes.length * 2);
    for (const fam of UNIT_FAMILIES) {
      ctx.fillStyle = fam.colour;
      lastPx.fill(-1);
      for (let i = 0; i < t.count; i++) {
        if (this.family[t.unit[i]] !== fam.id) continue;
        const s = t.start[i];
        const e = t.end[i];
        if (e < d0 || s > d1) continue;
        const l = this.opLane[i];
        if (l < 0) continue;
        const a = this.x(s);
        const w = Math.max(0.6, this.x(e) - a);
        const slot = l * 2 + t.async[i];
        if (w < 1 && Math.floor(a) === lastPx[slot]) continue;
        lastPx[slot] = Math.floor(a);
        const y = l * LANE_H;
        if (fam.id === 'sync') ctx.fillRect(a, y + 10, w, 3);
        else if (t.async[i]) {
          ctx.globalAlpha = 0.55;
          ctx.fillRect(a, y + 15, w, this.spansPair[i] ? LANE_H + 6 : 6);
          ctx.globalAlpha = 1;
        } else ctx.fillRect(a, y + 3, w, 11);
      }
    }
    ctx.restore();
    // Axis: cycles, and microseconds at the GPU's clock.
    const y = this.lanes.length * LANE_H;
    ctx.fillStyle = dim;
    ctx.font = `${this.font.axis}px system-ui, sans-serif`;
    const baseline = y + 3 + this.font.axis;
    const ticks = this.x
      .ticks(axisTickCount(this.width - LABEL_W, this.font.axis))
      .filter((tick) => this.x(tick) >= LABEL_W)
      .map((tick) => ({ px: this.x(tick), text: tickLabel(tick) }));
    const xs = tickLabelXs(
      ticks.map((t) => ({ px: t.px, textPx: ctx.measureText(t.text).width })),
      this.width - 2,
    );
    ticks.forEach((t, k) => {
      ctx.fillRect(t.px, y, 1, 4);
      const x = xs[k];
      if (x !== null) ctx.fillText(t.text, x, baseline);
    });
    ctx.fillText(`cycles · ${((d1 - d0) / (v.clockGHz * 1e3)).toFixed(2)} µs`, 4, baseline, LABEL_W - 10);
  }

  private drawOverview(): void {
    const ctx = this.overview.getContext('2d')!;
    ctx.clearRect(0, 0, this.width, OVERVIEW_H);
    const v = this.view;
    if (!v) return;
    const t = v.timeline;
    const h = Math.max(2, Math.floor((OVERVIEW_H - 4) / Math.max(1, this.lanes.length)));
    for (let i = 0; i < t.count; i++) {
      const f = this.family[t.unit[i]];
      if (f === 'sync') continue;
      const l = this.opLane[i];
      if (l < 0) continue;
      ctx.fillStyle = familyColour(f);
      const a = this.x0(t.start[i]);
      ctx.fillRect(a, 2 + l * h, Math.max(0.5, this.x0(t.end[i]) - a), h - 1);
    }
  }

  private syncBrush(): void {
    const [a, b] = this.x.domain();
    this.syncing = true;
    select(this.brushG).call(this.brusher.move, this.transform.k === 1 ? null : [this.x0(a), this.x0(b)]);
    this.syncing = false;
  }

  private reportWindow(): void {
    const v = this.view;
    if (!v) return;
    const [a, b] = this.x.domain();
    const t0 = performance.now();
    const u = utilizationIn(v, this.family, a, b);
    performance.measure('flashscope:timeline-utilization', { start: t0, end: performance.now() });
    this.cb.onWindow([a, b], u);
  }

  private hit(e: MouseEvent): { op: number; cycle: number } {
    const v = this.view!;
    const r = this.over.getBoundingClientRect();
    const px = e.clientX - r.left;
    const py = e.clientY - r.top;
    const cycle = this.x.invert(px);
    const lane = Math.floor(py / LANE_H);
    if (lane < 0 || lane >= this.lanes.length || px < LABEL_W) return { op: -1, cycle };
    const t = v.timeline;
    const tol = this.x.invert(px + 3) - cycle;
    const inAsync = py - lane * LANE_H >= 14;
    let best = -1;
    let bestLen = Infinity;
    for (let i = 0; i < t.count; i++) {
      if (this.opLane[i] !== lane || t.start[i] > cycle + tol || t.end[i] < cycle - tol) continue;
      // Prefer ops of the row (exec / async) the pointer is on, then the shortest.
      const len = t.end[i] - t.start[i] + (t.async[i] === (inAsync ? 1 : 0) ? 0 : 1e12);
      if (len < bestLen) {
        bestLen = len;
        best = i;
      }
    }
    return { op: best, cycle };
  }

  /** The next (+1) or previous (−1) op in time from the keyboard's, or from the cursor. */
  private keyOp(dir: 1 | -1): void {
    const v = this.view;
    if (!v || v.timeline.count === 0) return;
    const t = v.timeline;
    if (!this.byStart || this.byStart.length !== t.count)
      this.byStart = Int32Array.from({ length: t.count }, (_, i) => i).sort((a, b) => t.start[a] - t.start[b] || a - b);
    const order = this.byStart;
    const from = this.hover >= 0 ? this.hover : this.cursorOp;
    let k = from >= 0 ? order.indexOf(from) + dir : 0;
    k = Math.max(0, Math.min(order.length - 1, k));
    this.hover = order[k];
    const [a, b] = this.x.domain();
    // Keep the op in the window: pan so it sits in the middle.
    if (t.start[this.hover] < a || t.start[this.hover] > b)
      select(this.over).call(this.zoomer.translateBy, (this.x(a + (b - a) / 2) - this.x(t.start[this.hover])) / this.transform.k, 0);
    this.drawOverlay();
    this.showTip(this.hover, this.x(t.start[this.hover]), this.laneY(this.hover));
    this.live.textContent = this.tip.textContent;
  }

  private showTip(op: number, x: number, y: number): void {
    const v = this.view!;
    const t = v.timeline;
    const s = v.map.opStep[op];
    this.tip.hidden = false;
    this.tip.textContent = `${v.roles[t.role[op]].name}: ${t.strings[t.op[op]]} · ${t.strings[t.unit[op]]}${t.strings[t.tile[op]] ? ` · ${t.strings[t.tile[op]]}` : ''} · cycles ${Math.round(t.start[op])}–${Math.round(t.end[op])} (${Math.round(t.end[op] - t.start[op])})${v.opKinds[op] ? ` · ${v.opKinds[op]}` : ''}${s >= 0 ? ` · click or Enter: step ${s + 1}` : ''}`;
    this.tip.style.left = `${Math.min(this.width - 260, Math.max(0, x + 12))}px`;
    this.tip.style.top = `${y + 14}px`;
  }

  private onMove(e: MouseEvent): void {
    if (!this.view) return;
    const { op } = this.hit(e);
    if (op !== this.hover) {
      this.hover = op;
      this.drawOverlay();
    }
    if (op < 0) {
      this.tip.hidden = true;
      return;
    }
    const r = this.over.getBoundingClientRect();
    this.showTip(op, e.clientX - r.left, e.clientY - r.top);
  }

  private laneY(op: number): number {
    const v = this.view!;
    return this.opLane[op] * LANE_H + (v.timeline.async[op] ? 18 : 8);
  }

  private drawOverlay(): void {
    const t0 = performance.now();
    this.paintOverlay();
    performance.measure('flashscope:timeline-cursor', { start: t0, end: performance.now() });
  }

  private paintOverlay(): void {
    const ctx = this.over.getContext('2d')!;
    ctx.clearRect(0, 0, this.width, this.height);
    const v = this.view;
    if (!v) return;
    const t = v.timeline;
    const { hl, err } = this.colours;
    const outline = (i: number, colour: string) => {
      if (i < 0 || this.opLane[i] < 0) return;
      const a = this.x(t.start[i]);
      const w = Math.max(2, this.x(t.end[i]) - a);
      const y = this.opLane[i] * LANE_H;
      ctx.strokeStyle = colour;
      ctx.lineWidth = 2;
      ctx.strokeRect(a, y + 1, w, LANE_H - 2);
    };
    outline(this.cursorOp, err);
    if (this.hover >= 0) {
      outline(this.hover, hl);
      // Arrows from the completion of each op this one waited on.
      ctx.strokeStyle = hl;
      ctx.fillStyle = hl;
      ctx.lineWidth = 1.2;
      const tx = this.x(t.start[this.hover]);
      const ty = this.laneY(this.hover);
      for (let d = t.depStart[this.hover]; d < t.depStart[this.hover + 1]; d++) {
        const src = t.deps[d];
        if (src < 0 || this.opLane[src] < 0) continue;
        const sx = this.x(t.end[src]);
        const sy = this.laneY(src);
        ctx.beginPath();
        ctx.moveTo(sx, sy);
        ctx.bezierCurveTo(sx + 30, sy, tx - 30, ty, tx, ty);
        ctx.stroke();
        ctx.beginPath();
        ctx.moveTo(tx, ty);
        ctx.lineTo(tx - 6, ty - 3);
        ctx.lineTo(tx - 6, ty + 3);
        ctx.fill();
      }
    }
    if (this.cursor !== null) {
      const px = this.x(this.cursor);
      if (px >= LABEL_W && px <= this.width) {
        ctx.fillStyle = err;
        ctx.fillRect(px - 1, 0, 2, this.lanes.length * LANE_H);
      }
    }
    this.over.dataset.cursor = this.cursor === null ? '' : String(Math.round(this.cursor));
  }
}

/**
 * Fraction of [a, b] in which each unit family had an op in flight (union of the ops'
 * intervals; sub-partition units like tensor.sp0..3 are averaged over the four).
 */
export function utilizationIn(v: HwView, family: string[], a: number, b: number): Record<string, number> {
  const t = v.timeline;
  const byUnit = new Map<number, [number, number][]>();
  const units = new Set<number>();
  for (let i = 0; i < t.count; i++) {
    if (family[t.unit[i]] === 'sync') continue;
    units.add(t.unit[i]);
    const s = Math.max(a, t.start[i]);
    const e = Math.min(b, t.end[i]);
    if (e <= s) continue;
    let l = byUnit.get(t.unit[i]);
    if (!l) byUnit.set(t.unit[i], (l = []));
    l.push([s, e]);
  }
  const sum: Record<string, number> = {};
  const count: Record<string, number> = {};
  for (const u of units) {
    const f = family[u];
    count[f] = (count[f] ?? 0) + 1;
    const l = (byUnit.get(u) ?? []).sort((x, y) => x[0] - y[0]);
    let busy = 0;
    let cs = -Infinity;
    let ce = -Infinity;
    for (const [s, e] of l) {
      if (s > ce) {
        if (ce > cs) busy += ce - cs;
        cs = s;
        ce = e;
      } else ce = Math.max(ce, e);
    }
    if (ce > cs) busy += ce - cs;
    sum[f] = (sum[f] ?? 0) + busy / Math.max(1e-9, b - a);
  }
  const out: Record<string, number> = {};
  for (const f of Object.keys(sum)) out[f] = sum[f] / count[f];
  return out;
}
