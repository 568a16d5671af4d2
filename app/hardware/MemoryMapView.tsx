// Where every tile lives at the debugger's position: SMEM as a byte-accurate strip per CTA,
// TMEM (Blackwell) as its 128-lane × 512-column grid, and each role's register budget.
// The position is the cursor cycle of the step-map (engine/hw/step-map.ts).

import { scaleLinear } from 'd3';
import { Fragment } from 'react';
import { liveAt, type HwView, type MemInterval, findDescriptor } from '../../engine/api.ts';
import { usePane } from '../store/pane-context.ts';
import { grouped } from './format.ts';
import { useApp } from '../store/store.ts';
import { useHwPane } from '../store/hw-store.ts';
import { HwStatus } from './HwStatus.tsx';
import { memoryCursor } from './memory-cursor.ts';
import { tensorColour } from './palette.ts';
import { tmemBlockLabel, tmemColumns, tmemLine } from './tmem-line.ts';
import { useHardwareSync } from './useHardware.ts';
import { useFolded, ViewTitle } from './ViewTitle.tsx';
import { UpstreamChoice } from './UpstreamChoice.tsx';

const kb = (b: number) => `${Math.round((b / 1024) * 10) / 10} KiB`;

// "ctaN/" for co-resident CTAs on one SM; "leader/" and "peer/" for FA4's CTA pair on two SMs.
const CTA_PREFIX = /^((?:cta\d+\/)?(?:leader|peer)|cta\d+)\//;
function ctaOf(buffer: string): string {
  const m = CTA_PREFIX.exec(buffer);
  return m ? m[1] : '';
}
const bare = (buffer: string) => buffer.replace(CTA_PREFIX, '');

/** "K2 s1": the tile a block holds, with its ring stage for K/V buffers. */
const blockLabel = (m: MemInterval) =>
  `${m.tile}${m.buffer.endsWith('sKV') || m.buffer.endsWith('sK') || m.buffer.endsWith('sV') ? ` s${m.stage}` : ''}`;

function SmemStrip({ view, live, cta, cursor }: { view: HwView; live: MemInterval[]; cta: string; cursor: number }) {
  const cap = view.resources.smem.capacity_bytes;
  const W = 1000;
  const x = scaleLinear().domain([0, cap]).range([0, W]);
  const ticks = x.ticks(8);
  const blocks = live.filter((m) => m.space === 'smem' && ctaOf(m.buffer) === cta);
  const slots = view.resources.smem.buffers.filter((b) => b.name !== 'mbarriers' && b.name !== 'tmem_holding');
  return (
    <figure className="hw-smem" data-cta={cta || 'cta0'}>
      <figcaption>
        SMEM{cta ? ` · ${cta}` : ''}: {kb(view.resources.smem.used_bytes)} laid out of {kb(cap)} per CTA
      </figcaption>
      <svg viewBox={`-4 0 ${W + 40} 74`} className="hw-strip" role="img" aria-label={`Shared memory at cycle ${Math.round(cursor)}`}>
        <rect x={0} y={8} width={W} height={40} className="hw-strip-bg" />
        {slots.map((b) => (
          <rect
            key={`${b.name}${b.stage}`}
            x={x(b.offset)}
            y={8}
            width={Math.max(1, x(b.offset + b.bytes) - x(b.offset))}
            height={40}
            className="hw-slot"
          >
            <title>{`${b.name}[${b.stage}] at ${b.offset} B, ${b.bytes} B`}</title>
          </rect>
        ))}
        {blocks.map((m) => {
          const filling = cursor < m.ready;
          const w = Math.max(1, x(m.offset + m.bytes) - x(m.offset));
          return (
            <g
              key={`${m.buffer}|${m.stage}|${m.tile}|${m.start}`}
              data-testid="smem-block"
              data-tile={m.tile}
              data-buffer={bare(m.buffer)}
              data-stage={m.stage}
              data-offset={m.offset}
              data-bytes={m.bytes}
              data-state={filling ? 'filling' : 'ready'}
            >
              <rect
                x={x(m.offset)}
                y={10}
                width={w}
                height={36}
                fill={tensorColour(m.tile)}
                opacity={filling ? 0.45 : 0.9}
                className={filling ? 'hw-filling' : undefined}
              />
              <text x={x(m.offset) + w / 2} y={33} textAnchor="middle" className="hw-label">
                {w > 24 ? blockLabel(m) : ''}
              </text>
              <title>{`${m.tile} in ${bare(m.buffer)}[${m.stage}]: bytes ${m.offset}–${m.offset + m.bytes} (${kb(m.bytes)}); ${filling ? `copy lands at cycle ${Math.round(m.ready)}` : `ready since cycle ${Math.round(m.ready)}`}, released at ${Math.round(m.end)}`}</title>
            </g>
          );
        })}
        <line x1={x(cap)} x2={x(cap)} y1={2} y2={52} className="hw-capacity" />
        {ticks.map((t) => (
          <g key={t} transform={`translate(${x(t)},0)`}>
            <line y1={48} y2={53} className="hw-tick" />
            <text y={66} textAnchor="middle" className="hw-axis">
              {Math.round(t / 1024)}
            </text>
          </g>
        ))}
        <text x={W + 2} y={66} className="hw-axis">
          KiB
        </text>
      </svg>
      {/* On a phone the strip's labels would be a few pixels tall: the same blocks as a line of text. */}
      <p className="hw-smem-list" data-testid="smem-list">
        {blocks.length === 0
          ? 'Empty.'
          : [...blocks]
              .sort((a, b) => a.offset - b.offset)
              .map((m) => `${blockLabel(m)} ${kb(m.bytes)}${cursor < m.ready ? ' (loading)' : ''}`)
              .join(' · ')}
      </p>
    </figure>
  );
}

function TmemGrid({ view, live, cursor, cta }: { view: HwView; live: MemInterval[]; cursor: number; cta: string }) {
  const t = view.resources.tmem!;
  const W = 1000;
  const H = 128;
  const x = scaleLinear().domain([0, t.columns]).range([0, W]);
  const lanes = t.lanes;
  const blocks = live.filter((m) => m.space === 'tmem' && ctaOf(m.buffer) === cta);
  const cols = (m: MemInterval) => tmemColumns(m, lanes);
  // S first, P (written over half of S) on top.
  const order = [...blocks].sort((a, b) => (a.tile.startsWith('P') ? 1 : 0) - (b.tile.startsWith('P') ? 1 : 0));
  return (
    <figure className="hw-tmem" data-cta={cta || 'cta0'}>
      <figcaption>
        TMEM{cta ? ` · ${cta}` : ''}: {lanes} lanes × {t.columns} columns of 32 bits, {t.used_columns} allocated
      </figcaption>
      <svg viewBox={`-4 0 ${W + 8} ${H + 30}`} role="img" aria-label={`Tensor memory at cycle ${Math.round(cursor)}`}>
        <rect x={0} y={0} width={W} height={H} className="hw-strip-bg" />
        {t.buffers
          .filter((b) => !b.name.startsWith('P'))
          .map((b) => (
            <g key={b.name}>
              <rect x={x(b.column)} y={0} width={x(b.column + b.columns) - x(b.column)} height={H} className="hw-slot" />
              <text x={x(b.column) + 4} y={H - 4} className="hw-axis">
                {b.name} · col {b.column}
              </text>
            </g>
          ))}
        {order.map((m) => {
          const p = m.tile.startsWith('P');
          const filling = cursor < m.ready;
          const w = x(m.offset + cols(m)) - x(m.offset);
          return (
            <g
              key={`${m.buffer}|${m.tile}|${m.start}`}
              data-testid="tmem-block"
              data-tile={m.tile}
              data-column={m.offset}
              data-columns={cols(m)}
              data-state={filling ? 'filling' : 'ready'}
            >
              <rect
                x={x(m.offset)}
                y={p ? 10 : 4}
                width={w}
                height={p ? H - 20 : H - 8}
                fill={tensorColour(m.tile)}
                opacity={filling ? 0.45 : 0.85}
              />
              <text x={x(m.offset) + w / 2} y={H / 2 + 4} textAnchor="middle" className="hw-label">
                {tmemBlockLabel(m)}
              </text>
              <title>{`${m.tile}: columns ${m.offset}–${m.offset + cols(m)}${p ? ', 16-bit P packed two per column over part of S' : ''}`}</title>
            </g>
          );
        })}
        {[0, 128, 256, 384, 512]
          .filter((c) => c <= t.columns)
          .map((c) => (
            <text key={c} x={x(c)} y={H + 14} textAnchor={c === 0 ? 'start' : c === t.columns ? 'end' : 'middle'} className="hw-axis">
              {c}
            </text>
          ))}
      </svg>
      <p className="hw-tmem-list" data-testid="tmem-list">
        {tmemLine(blocks, lanes, cursor)}
      </p>
    </figure>
  );
}

/**
 * FA4's 2-CTA mode: the two CTAs of a pair sit on two SMs. What each holds, side by side: its
 * own Q tiles and TMEM (its 128 rows of S, P and O), and one half of every K/V tile; the
 * leader's MMA warp issues the cta_group::2 MMAs for both. Read from the schedule's events.
 */
const KV_BUFFERS = ['sKV', 'sK', 'sV'];
function CtaPair({ view, live }: { view: HwView; live: MemInterval[] }) {
  const r = view.resources;
  const half = r.tiles.block_n / 2;
  const stage = r.smem.buffers.find((b) => KV_BUFFERS.includes(b.name));
  const split = r.smem.buffers.some((b) => b.name === 'sK');
  const q = r.smem.buffers.filter((b) => b.name === 'sQ');
  const side = (i: number) => {
    const name = i === 0 ? 'leader' : 'peer';
    const mine = (m: { space: string; buffer: string }) => m.space === 'smem' && ctaOf(m.buffer).endsWith(name);
    const qTiles = [...new Set(view.memory.filter((m) => mine(m) && bare(m.buffer) === 'sQ').map((m) => m.tile.split('.')[0]))];
    const kv = live.filter((m) => mine(m) && KV_BUFFERS.includes(bare(m.buffer))).map((m) => m.tile);
    return (
      <div className="hw-pair-cta" data-testid="pair-cta" data-cta={i} key={name}>
        <strong>CTA {i}</strong>{' '}
        {i === 0 ? '(leader: its MMA warp issues tcgen05.mma cta_group::2 for both)' : '(peer: its MMA warp issues nothing)'}
        <ul>
          <li>
            Q tiles {qTiles.join(', ')} of the pair: {q.length} × sQ ({kb(q[0]?.bytes ?? 0)} each
            {split ? ', the two 128-column halves of d' : ''})
          </li>
          <li>
            K/V: {r.kv_stage} stages of {kb(stage?.bytes ?? 0)}
            {split ? ' in sK and in sV' : ''}, each holding rows {i * half}–{(i + 1) * half - 1} of a {r.tiles.block_n}-row K or V tile
            {split ? ' (one 128-column half of d or dv at a time)' : ''}
            {kv.length > 0 ? ` (now: ${kv.join(', ')})` : ''}
          </li>
          <li>
            TMEM: S, P and O of its own {r.tiles.block_m}-row tiles ({r.tmem?.used_columns ?? 0} columns)
          </li>
        </ul>
      </div>
    );
  };
  return (
    <figure className="hw-pair" data-testid="cta-pair" aria-label="CTA pair">
      <figcaption>2-CTA mode (cta_group = 2): the two CTAs of a pair, one per SM — what each holds now</figcaption>
      {side(0)}
      {side(1)}
    </figure>
  );
}

function Registers({ view, live }: { view: HwView; live: MemInterval[] }) {
  const per = view.resources.registers.per_sm;
  const maxThread = 255;
  const roles = view.resources.roles;
  const registerNote = findDescriptor(view.algo)?.registerNote;
  return (
    <figure className="hw-regs">
      <figcaption>
        Registers: {grouped(view.resources.registers.used)} of {grouped(per)} per SM for one CTA
        {registerNote ? ` (${registerNote})` : ''}
      </figcaption>
      <table className="hw-reg-table">
        <tbody>
          {roles.map((r) => {
            const total = r.registers * 32 * r.warps.length;
            const holds = live.filter(
              (m) =>
                m.space === 'regs' &&
                m.stage === Number(/(\d+)$/.exec(r.name)?.[1] ?? -1) &&
                r.name.startsWith('consumer') &&
                !r.kernel_name,
            );
            return (
              <tr key={r.name} data-testid="reg-role" data-role={r.name} data-registers={r.registers}>
                <th>
                  {r.name}
                  {r.kernel_name && <span className="dim"> ({r.kernel_name})</span>}
                </th>
                <td className="num">{r.registers}/thr</td>
                <td className="bar">
                  <span
                    className="hw-bar"
                    style={{ width: `${(100 * r.registers) / maxThread}%` }}
                    title={`${r.registers} of ${maxThread} registers per thread`}
                  />
                </td>
                <td className="num">{((100 * total) / per).toFixed(1)}% of file</td>
                <td className="dim">{holds.map((m) => `${m.buffer.replace('regs.', '')}=${m.tile}`).join(' ')}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </figure>
  );
}

export function MemoryMapView() {
  useHardwareSync();
  const { pane } = usePane();
  const view = useHwPane(pane, (s) => s.view);
  const step = useApp((s) => s.playback[pane].frame?.step ?? 0);
  const cursor = memoryCursor(view, step);
  const folded = useFolded(pane, 'memory');
  if (folded)
    return (
      <section className="view hw-memory" aria-label="Memory map">
        <ViewTitle pane={pane} id="memory" title="Memory map" />
      </section>
    );
  // The strips are built here by plain calls (they hold no hooks), so the User Timing
  // measure below covers the memory map's own work for this step (read by bench:hwviews).
  const t0 = performance.now();
  const live = view && cursor !== null ? liveAt(view.memory, cursor) : [];
  const ctas = view ? smemCtas(view) : [];
  const body =
    view && cursor !== null ? (
      <>
        <p className="dim hw-memory-when" data-testid="memory-cycle">
          Memory at cycle {grouped(Math.round(cursor))}, once every step so far has run: stepping forward never goes back in time.
        </p>
        {ctas.map((c) => (
          <Fragment key={c}>{SmemStrip({ view, live, cta: c, cursor })}</Fragment>
        ))}
        {view.resources.cta_group === 2 && CtaPair({ view, live })}
        {view.resources.tmem &&
          (view.resources.cta_group === 2 ? ['leader', 'peer'] : ['']).map((c) => (
            <Fragment key={c || 'cta0'}>{TmemGrid({ view, live, cursor, cta: c })}</Fragment>
          ))}
        {Registers({ view, live })}
        {view.resources.notes.length > 0 && (
          <ul className="hw-notes dim">
            {view.resources.notes.map((n) => (
              <li key={n}>{n}</li>
            ))}
          </ul>
        )}
        <UpstreamChoice view={view} />
      </>
    ) : null;
  performance.measure('flashscope:memory-map', { start: t0, end: performance.now() });
  return (
    <section className="view hw-memory" aria-label="Memory map">
      <ViewTitle pane={pane} id="memory" title="Memory map" />
      <HwStatus />
      {body}
    </section>
  );
}

/** CTA prefixes ("" when one CTA per SM) that own SMEM buffers, once per view. */
const ctaCache = new WeakMap<HwView, string[]>();
function smemCtas(view: HwView): string[] {
  let c = ctaCache.get(view);
  if (!c) ctaCache.set(view, (c = [...new Set(view.memory.filter((m) => m.space === 'smem').map((m) => ctaOf(m.buffer)))].sort()));
  return c;
}
