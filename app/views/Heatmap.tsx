// One matrix as a canvas heatmap: a pixel per cell painted from a colour lookup table, then
// scaled up without smoothing; the tile grid, the current tile and a hover tooltip on top.
// NaN cells ("not computed yet") are a dark checker, masked cells a grey stripe.

import { memo, useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { CLIPPED, colourIndex, MASKED, NOT_COMPUTED, type ColourScale } from './colour.ts';
import { Legend } from './Legend.tsx';
import { heatmapSize } from './heatmap-size.ts';

export interface Rect {
  r0: number;
  r1: number;
  c0: number;
  c1: number;
}

export interface HeatmapProps {
  id: string;
  title: string;
  data: ArrayLike<number>;
  /** Changes whenever `data` or `mask` was modified in place. */
  version?: number;
  /** The cells the update to `version` changed (from version − 1); absent: any may have. */
  changed?: Rect;
  rows: number;
  cols: number;
  /** Data is stored cols×rows and shown transposed (Kᵀ). */
  transposed?: boolean;
  mask?: Uint8Array;
  scale: ColourScale;
  tileRows: number;
  tileCols: number;
  highlight?: Rect;
  /** Rows drawn with a side marker (e.g. FA1 rows being rewritten in HBM). */
  markRows?: [number, number];
  /** Longest side on screen, CSS pixels. */
  maxPx: number;
  onTileClick?: (tileRow: number, tileCol: number) => void;
  rowLabel?: string;
  colLabel?: string;
  /** Cells drawn with a marker (row-major r·cols + c), e.g. P values the FP8 cast flushed to zero. */
  marks?: Int32Array;
  /** What a marker means, for the legend and the tooltip. */
  marksLabel?: string;
  /** Every cell holds a value (a final result): the legend leaves out "not computed". */
  complete?: boolean;
  /** Extra tooltip lines for the hovered cell's tile (e.g. its quantization scales). */
  tileInfo?: (tileRow: number, tileCol: number) => string[];
}

/** Image pixels one task compares when the whole image is repainted (a seek, a new scale): a few ms of work. */
export const PAINT_SLICE_PIXELS = 1 << 16;

/** Colour of cell markers: a red that neither viridis nor RdBu's middle holds. */
export const MARK_COLOUR = '#ff3b30';

function fmt(v: number): string {
  if (Number.isNaN(v)) return 'not computed';
  if (!Number.isFinite(v)) return v > 0 ? '+∞' : '−∞';
  return Number(v.toPrecision(6)).toString();
}

function HeatmapImpl(props: HeatmapProps) {
  const { data, rows, cols, transposed, mask, scale, tileRows, tileCols, highlight, markRows, maxPx, marks } = props;
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const offscreen = useMemo(() => document.createElement('canvas'), []);
  const [hover, setHover] = useState<{ r: number; c: number; x: number; y: number } | null>(null);

  const { width, height, kr, kc } = heatmapSize(rows, cols, maxPx);
  const at = (r: number, c: number) => (transposed ? r + c * rows : r * cols + c);

  // Painting the cells is the expensive part: do it only when the data or the colours
  // change. The grid and the highlight are redrawn on top from the cached image.
  const imageRef = useRef<ImageData | null>(null);
  /** What the cached image shows, per cell, so a new frame repaints only the cells that changed. */
  const shownRef = useRef<{ values: Float64Array; masked: Uint8Array; scale: ColourScale; transposed: boolean } | null>(null);
  const [painted, setPainted] = useState(0);
  /** Cells painted since the canvas was last drawn: 'all' after a full paint, so the next draw redraws only this region. */
  const dirtyRef = useRef<Rect | 'all' | null>('all');
  /** What the canvas shows besides the cells: redrawn in full when any of it changed. */
  const overlayRef = useRef<{ key: string; marks: Int32Array | undefined; h: [number, number, number, number] } | null>(null);
  const versionRef = useRef<number | undefined>(undefined);
  /** Image rows still to compare with the data, from a paint of the whole image under way. */
  const staleRef = useRef<[number, number] | null>(null);
  /** Paints the next slice of a whole-image paint with the latest data: one timer at a time, so steps arriving faster than timers fire cannot starve it. */
  const sliceRef = useRef<(() => void) | null>(null);
  const sliceTimer = useRef(0);
  useEffect(() => () => clearTimeout(sliceTimer.current), []);
  const [cr0, cr1, cc0, cc1] = props.changed ? [props.changed.r0, props.changed.r1, props.changed.c0, props.changed.c1] : [0, -1, 0, -1];
  // Below one screen pixel per cell the image holds every k-th cell (what nearest-neighbour
  // scaling would show anyway), so a 2748×2748 matrix is painted and scaled as ~690×690 pixels.
  const iw = Math.ceil(cols / kc);
  const ih = Math.ceil(rows / kr);
  useEffect(() => {
    const previous = versionRef.current;
    versionRef.current = props.version;
    if (offscreen.width !== iw || offscreen.height !== ih) {
      offscreen.width = iw;
      offscreen.height = ih;
    }
    const octx = offscreen.getContext('2d')!;
    const cachedImg = imageRef.current;
    const cachedShown = shownRef.current;
    const fresh =
      !cachedImg ||
      cachedImg.width !== iw ||
      cachedImg.height !== ih ||
      !cachedShown ||
      cachedShown.scale !== scale ||
      cachedShown.transposed !== !!transposed;
    let img = cachedImg!;
    let shown = cachedShown!;
    if (fresh) {
      img = imageRef.current = octx.createImageData(iw, ih);
      shown = shownRef.current = {
        values: new Float64Array(iw * ih).fill(Number.NaN),
        masked: new Uint8Array(iw * ih).fill(2),
        scale,
        transposed: !!transposed,
      };
    }
    const px = img.data;
    const { lut } = scale;
    // A patch one version on from what is shown: only its cells can differ, so a step on a
    // 2748×2748 matrix compares one tile's pixels, not the whole image.
    const onlyPatch = !fresh && cr1 >= 0 && previous !== undefined && props.version === previous + 1;
    /** Compares and repaints image rows R0–R1, columns C0–C1; `whole`: part of a paint of the whole image. */
    const paint = (R0: number, R1: number, C0: number, C1: number, whole: boolean) => {
      let minR = ih;
      let maxR = -1;
      let minC = iw;
      let maxC = -1;
      // How many image pixels this paint compared: what the tests check a step costs.
      canvasRef.current?.setAttribute('data-compared', String(Math.max(0, R1 - R0) * Math.max(0, C1 - C0)));
      for (let R = R0; R < R1; R++) {
        for (let C = C0; C < C1; C++) {
          const r = R * kr;
          const c = C * kc;
          const i = transposed ? r + c * rows : r * cols + c;
          const cellIdx = R * iw + C;
          const v = data[i];
          const mk = mask ? mask[i] : 0;
          const old = shown.values[cellIdx];
          if (shown.masked[cellIdx] === mk && (old === v || (Number.isNaN(old) && Number.isNaN(v)))) continue;
          shown.values[cellIdx] = v;
          shown.masked[cellIdx] = mk;
          if (R < minR) minR = R;
          if (R > maxR) maxR = R;
          if (C < minC) minC = C;
          if (C > maxC) maxC = C;
          const o = cellIdx * 4;
          let colour: [number, number, number] | undefined;
          if (mk) colour = MASKED[(R + C) & 2 ? 1 : 0];
          else if (Number.isNaN(v)) colour = NOT_COMPUTED[(R ^ C) & 1];
          else if (v === -Infinity) colour = MASKED[(R + C) & 2 ? 1 : 0];
          if (colour) {
            px[o] = colour[0];
            px[o + 1] = colour[1];
            px[o + 2] = colour[2];
            px[o + 3] = 255;
            continue;
          }
          let t = colourIndex(scale, v);
          if (t < 0 || t > 255) {
            if (scale.clips) {
              px[o] = CLIPPED[0];
              px[o + 1] = CLIPPED[1];
              px[o + 2] = CLIPPED[2];
              px[o + 3] = 255;
              continue;
            }
            t = t < 0 ? 0 : 255;
          }
          px[o] = lut[t * 4];
          px[o + 1] = lut[t * 4 + 1];
          px[o + 2] = lut[t * 4 + 2];
          px[o + 3] = 255;
        }
      }
      if (maxR < 0) return; // nothing changed
      octx.putImageData(img, 0, 0, minC, minR, maxC - minC + 1, maxR - minR + 1);
      const d = dirtyRef.current;
      const cells = { r0: minR * kr, r1: (maxR + 1) * kr, c0: minC * kc, c1: (maxC + 1) * kc };
      dirtyRef.current =
        whole || d === 'all'
          ? 'all'
          : d
            ? { r0: Math.min(d.r0, cells.r0), r1: Math.max(d.r1, cells.r1), c0: Math.min(d.c0, cells.c0), c1: Math.max(d.c1, cells.c1) }
            : cells;
      setPainted((n) => n + 1);
    };
    if (onlyPatch) {
      const [R0, R1] = [Math.ceil(Math.max(0, cr0) / kr), Math.min(ih, Math.ceil(cr1 / kr))];
      const [C0, C1] = [Math.ceil(Math.max(0, cc0) / kc), Math.min(iw, Math.ceil(cc1 / kc))];
      const st = staleRef.current;
      if ((R1 - R0) * (C1 - C0) <= PAINT_SLICE_PIXELS) paint(R0, R1, C0, C1, false);
      else staleRef.current = st ? [Math.min(st[0], R0), Math.max(st[1], R1)] : [R0, R1];
    } else staleRef.current = [0, ih];
    // A whole image larger than one slice goes in slices of PAINT_SLICE_PIXELS, each its own task and
    // none in the step's own task (which already holds every view's commit), so a seek never holds
    // the main thread for the whole image; steps meanwhile paint their patch first.
    const sliceLater = () => {
      const st = staleRef.current;
      canvasRef.current?.setAttribute('data-stale-rows', String(st ? st[1] - st[0] : 0));
      if (!st || sliceTimer.current) return;
      sliceTimer.current = window.setTimeout(() => {
        sliceTimer.current = 0;
        sliceRef.current?.();
      }, 0);
    };
    sliceRef.current = () => {
      const st = staleRef.current;
      if (!st) return;
      const end = Math.min(st[1], st[0] + Math.max(1, Math.floor(PAINT_SLICE_PIXELS / Math.max(1, iw))));
      paint(st[0], end, 0, iw, true);
      staleRef.current = end < st[1] ? [end, st[1]] : null;
      sliceLater();
    };
    const st = staleRef.current;
    if (st && (st[1] - st[0]) * iw <= PAINT_SLICE_PIXELS) sliceRef.current();
    else sliceLater();
  }, [data, props.version, cr0, cr1, cc0, cc1, rows, cols, kr, kc, iw, ih, transposed, mask, scale, offscreen]);

  const [h0, h1, h2, h3] = highlight ? [highlight.r0, highlight.r1, highlight.c0, highlight.c1] : [0, 0, 0, 0];
  const [m0, m1] = markRows ?? [0, 0];
  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas || painted === 0) return;
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(width * dpr);
    const h = Math.round(height * dpr);
    // Resizing a canvas reallocates it: only when the size really changed.
    const resized = canvas.width !== w || canvas.height !== h;
    if (resized) {
      canvas.width = w;
      canvas.height = h;
    }
    const ctx = canvas.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.imageSmoothingEnabled = false;
    const sx = width / cols;
    const sy = height / rows;
    // A step moves the highlight and changes one tile: redraw only those rectangles, so the
    // browser re-rasterises a tile's worth of canvas, not the whole matrix.
    const key = `${width}x${height}:${rows}x${cols}:${tileRows}x${tileCols}:${m0}-${m1}`;
    const prev = overlayRef.current;
    const d = dirtyRef.current;
    const partial = prev !== null && prev.key === key && prev.marks === marks && d !== 'all' && !resized;
    overlayRef.current = { key, marks, h: [h0, h1, h2, h3] };
    dirtyRef.current = null;
    ctx.save();
    if (partial) {
      ctx.beginPath();
      const add = (r0: number, r1: number, c0: number, c1: number) => {
        // Whole device pixels: a clip edge inside a pixel would blend the new image with the old there.
        const pad = 3 * Math.ceil(dpr);
        const x0 = Math.floor(c0 * sx * dpr) - pad;
        const y0 = Math.floor(r0 * sy * dpr) - pad;
        const x1 = Math.ceil(c1 * sx * dpr) + pad;
        const y1 = Math.ceil(r1 * sy * dpr) + pad;
        if (r1 > r0 && c1 > c0) ctx.rect(x0 / dpr, y0 / dpr, (x1 - x0) / dpr, (y1 - y0) / dpr);
      };
      if (d) add(d.r0, d.r1, d.c0, d.c1);
      add(prev.h[0], prev.h[1], prev.h[2], prev.h[3]);
      add(h0, h1, h2, h3);
      ctx.clip();
    }
    ctx.drawImage(offscreen, 0, 0, width, height);
    // Tile grid, only where tiles are big enough to read.
    ctx.strokeStyle = 'rgba(255,255,255,0.28)';
    ctx.lineWidth = 1;
    ctx.beginPath();
    if (tileCols * sx >= 4)
      for (let c = tileCols; c < cols; c += tileCols) ctx.moveTo(Math.round(c * sx) + 0.5, 0), ctx.lineTo(Math.round(c * sx) + 0.5, height);
    if (tileRows * sy >= 4)
      for (let r = tileRows; r < rows; r += tileRows) ctx.moveTo(0, Math.round(r * sy) + 0.5), ctx.lineTo(width, Math.round(r * sy) + 0.5);
    ctx.stroke();
    if (m1 > m0) {
      ctx.fillStyle = '#ff9f1c';
      ctx.fillRect(0, m0 * sy, 3, (m1 - m0) * sy);
    }
    if (marks?.length) {
      // A ring on cells big enough to hold one, else the whole cell: a flushed value must be
      // findable at any zoom.
      ctx.strokeStyle = MARK_COLOUR;
      ctx.fillStyle = MARK_COLOUR;
      ctx.lineWidth = Math.max(1, Math.min(2, sx / 6));
      for (const i of marks) {
        const r = Math.floor(i / cols);
        const c = i % cols;
        if (sx >= 5 && sy >= 5) {
          ctx.beginPath();
          ctx.arc((c + 0.5) * sx, (r + 0.5) * sy, Math.min(sx, sy) * 0.32, 0, 2 * Math.PI);
          ctx.stroke();
        } else ctx.fillRect(c * sx, r * sy, Math.max(1, sx), Math.max(1, sy));
      }
    }
    if (h1 > h0 && h3 > h2) {
      ctx.strokeStyle = '#ffd400';
      ctx.lineWidth = 2;
      ctx.strokeRect(h2 * sx + 1, h0 * sy + 1, (h3 - h2) * sx - 2, (h1 - h0) * sy - 2);
    }
    ctx.restore();
  }, [painted, width, height, rows, cols, tileRows, tileCols, h0, h1, h2, h3, m0, m1, offscreen, marks]);

  const cellAt = (e: React.MouseEvent<HTMLCanvasElement>) => {
    const rect = e.currentTarget.getBoundingClientRect();
    const c = Math.floor(((e.clientX - rect.left) / rect.width) * cols);
    const r = Math.floor(((e.clientY - rect.top) / rect.height) * rows);
    return {
      r: Math.max(0, Math.min(rows - 1, r)),
      c: Math.max(0, Math.min(cols - 1, c)),
      x: e.clientX - rect.left,
      y: e.clientY - rect.top,
    };
  };

  // The keyboard's cell: focus shows the current tile's numbers, arrows move a tile (Shift: a
  // cell), Enter selects the tile; the same text goes to a live region for screen readers.
  const [keyed, setKeyed] = useState(false);
  const tipId = useId();
  const cellBox = (r: number, c: number) => ({ r, c, x: ((c + 0.5) * width) / cols, y: ((r + 0.5) * height) / rows });
  const onKey = (e: KeyboardEvent<HTMLCanvasElement>) => {
    // Focus from a click leaves the arrows to the debugger's stepping; Tab focus takes them.
    if (!keyed) return;
    const cur = hover ?? cellBox(h1 > h0 ? h0 : 0, h3 > h2 ? h2 : 0);
    const dr = e.shiftKey ? 1 : tileRows;
    const dc = e.shiftKey ? 1 : tileCols;
    let { r, c } = cur;
    if (e.key === 'ArrowUp') r -= dr;
    else if (e.key === 'ArrowDown') r += dr;
    else if (e.key === 'ArrowLeft') c -= dc;
    else if (e.key === 'ArrowRight') c += dc;
    else if (e.key === 'Home') (r = 0), (c = 0);
    else if ((e.key === 'Enter' || e.key === ' ') && props.onTileClick)
      props.onTileClick(Math.floor(cur.r / tileRows), Math.floor(cur.c / tileCols));
    else return;
    e.preventDefault();
    e.stopPropagation();
    setKeyed(true);
    setHover(cellBox(Math.max(0, Math.min(rows - 1, r)), Math.max(0, Math.min(cols - 1, c))));
  };

  const hoverValue = hover ? data[at(hover.r, hover.c)] : 0;
  const hoverMasked = hover && mask ? mask[at(hover.r, hover.c)] === 1 : false;
  const hoverMarked = hover && marks ? marks.includes(hover.r * cols + hover.c) : false;
  const hoverTile = hover ? ([Math.floor(hover.r / tileRows), Math.floor(hover.c / tileCols)] as const) : undefined;
  return (
    <figure
      className="heatmap"
      data-matrix={props.id}
      data-highlight={highlight ? `${highlight.r0},${highlight.r1},${highlight.c0},${highlight.c1}` : ''}
    >
      <figcaption>
        <span className="hm-title">{props.title}</span>
        <span className="hm-shape">
          {rows}×{cols}
        </span>
      </figcaption>
      <div className="hm-canvas-wrap" style={{ width, height }}>
        <canvas
          ref={canvasRef}
          role="img"
          tabIndex={0}
          aria-label={`${props.title} heatmap, ${rows} by ${cols}: arrow keys read a tile's numbers${props.onTileClick ? ', Enter selects it' : ''}`}
          aria-describedby={hover ? tipId : undefined}
          style={{ width, height }}
          onMouseMove={(e) => {
            setKeyed(false);
            setHover(cellAt(e));
          }}
          onMouseLeave={() => !keyed && setHover(null)}
          onFocus={(e) => {
            if (!e.currentTarget.matches(':focus-visible')) return;
            setKeyed(true);
            setHover(cellBox(h1 > h0 ? h0 : 0, h3 > h2 ? h2 : 0));
          }}
          onBlur={() => {
            setKeyed(false);
            setHover(null);
          }}
          onKeyDown={onKey}
          onClick={(e) => {
            const { r, c } = cellAt(e);
            props.onTileClick?.(Math.floor(r / tileRows), Math.floor(c / tileCols));
          }}
        />
        {hover && (
          <div
            className="hm-tooltip"
            role="tooltip"
            id={tipId}
            aria-live={keyed ? 'polite' : undefined}
            style={
              hover.x > width / 2 && props.tileInfo
                ? { right: width - hover.x + 12, top: hover.y + 12 }
                : { left: Math.min(hover.x + 12, width - 20), top: hover.y + 12 }
            }
          >
            {props.id}[{hover.r}, {hover.c}] = {hoverMasked ? 'masked' : fmt(hoverValue)}
            {hoverMarked && props.marksLabel && (
              <>
                <br />
                <span className="hm-marked">{props.marksLabel}</span>
              </>
            )}
            <br />
            tile ({hoverTile![0]}, {hoverTile![1]})
            {props.tileInfo?.(hoverTile![0], hoverTile![1]).map((line) => (
              <span key={line}>
                <br />
                {line}
              </span>
            ))}
          </div>
        )}
      </div>
      <Legend
        scale={scale}
        label={props.title}
        showMasked={!!mask}
        marksLabel={marks?.length ? props.marksLabel : undefined}
        complete={props.complete}
      />
    </figure>
  );
}

export const Heatmap = memo(HeatmapImpl);
