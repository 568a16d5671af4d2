// One trace step said in words for the transport ("Load Q tile 0 (rows 0–15)"), from the
// event's kind, tensors and tile: the line id alone means nothing to a newcomer.

import { type HbmTensor, type Range, type TraceEvent, tensorName } from '../../engine/api.ts';

// Which index a tensor's tile runs over: query rows, keys, or both (a score tile).
const ROW_TENSORS: ReadonlySet<HbmTensor> = new Set(['Q', 'O', 'l', 'm', 'LSE', 'Opartial', 'LSEpartial', 'dO', 'D', 'dQ', 'dQaccum']);
const KEY_TENSORS: ReadonlySet<HbmTensor> = new Set(['K', 'V', 'dK', 'dV']);

const span = ([a, b]: Range) => (b - a <= 1 ? `${a}` : `${a}–${b - 1}`);

function rowsOf(e: TraceEvent): string {
  return `${e.tile.rows[1] - e.tile.rows[0] <= 1 ? 'row' : 'rows'} ${span(e.tile.rows)}`;
}
function keysOf(e: TraceEvent): string {
  return `${e.tile.cols[1] - e.tile.cols[0] <= 1 ? 'key' : 'keys'} ${span(e.tile.cols)}`;
}
const tileOf = (e: TraceEvent) => `tile (${e.tile.qBlock}, ${e.tile.kvBlock})`;
const hasKeys = (e: TraceEvent) => e.tile.kvBlock >= 0 && e.tile.cols[1] > e.tile.cols[0];

/** "Q tile 0 (rows 0–15) and K, V block 1 (keys 16–31)": what a load or write moves. */
function moved(e: TraceEvent, tensors: readonly HbmTensor[]): string {
  const rows = tensors.filter((t) => ROW_TENSORS.has(t));
  const keys = tensors.filter((t) => KEY_TENSORS.has(t));
  const tiles = tensors.filter((t) => !ROW_TENSORS.has(t) && !KEY_TENSORS.has(t));
  const parts: string[] = [];
  // A step over every row (FA1's initial write of O, ℓ, m) belongs to no Q tile.
  if (rows.length > 0) parts.push(`${rows.map(tensorName).join(', ')}${e.tile.qBlock >= 0 ? ` tile ${e.tile.qBlock}` : ''} (${rowsOf(e)})`);
  if (keys.length > 0) parts.push(`${keys.join(', ')} block ${e.tile.kvBlock} (${keysOf(e)})`);
  if (tiles.length > 0) parts.push(`${tiles.join(', ')} ${tileOf(e)}`);
  return parts.length > 0 ? parts.join(' and ') : tileOf(e);
}

/** The step in words, without the line id or the warp that runs it. */
export function stepInWords(e: TraceEvent): string {
  const against = hasKeys(e) ? ` over K block ${e.tile.kvBlock}` : '';
  const exp = e.base2 ? '2^' : 'e^';
  switch (e.kind) {
    case 'load':
      return `Load ${moved(e, e.tensors)}`;
    case 'write':
      return `Write ${moved(e, e.tensors)}`;
    case 'qk':
      return `S = Q·Kᵀ for Q tile ${e.tile.qBlock} × K block ${e.tile.kvBlock} (${rowsOf(e)}, ${keysOf(e)})`;
    case 'mask':
      return `Mask the hidden scores of S ${tileOf(e)}`;
    case 'rowmax':
      return `Running max m of ${rowsOf(e)}${against}`;
    case 'exp':
      return `P = ${exp}(S − m) for ${tileOf(e)}`;
    case 'rowsum':
      return `Running sum ℓ of ${rowsOf(e)}${against}`;
    case 'rescale':
      return `Rescale O of ${rowsOf(e)} by ${exp}(m_old − m_new)`;
    case 'pv':
      return `O += P·V with V block ${e.tile.kvBlock} (${rowsOf(e)})`;
    case 'normalize':
      return e.o.length === 0 ? `Normalize P of ${rowsOf(e)} by ℓ` : `Normalize O of ${rowsOf(e)} by ℓ; LSE = m + log ℓ`;
    case 'skip':
      return `Tile (${e.tile.qBlock}, ${e.tile.kvBlock}) skipped (empty): K, V block ${e.tile.kvBlock} is never loaded`;
    case 'combine':
      return `Combine the splits of ${rowsOf(e)} weighted by their LSE`;
    case 'dsum':
      return `D = rowsum(dO ∘ O) of ${rowsOf(e)}`;
    case 'recompute':
      return `Recompute P of ${tileOf(e)} from the LSE`;
    case 'dv':
      return `dV block ${e.tile.kvBlock} += Pᵀ·dO (${rowsOf(e)})`;
    case 'dp':
      return `dP = dO·Vᵀ for ${tileOf(e)}`;
    case 'ds':
      return `dS = P ∘ (dP − D) for ${tileOf(e)}`;
    case 'dq':
      return `dQ tile ${e.tile.qBlock} += dS·K from K block ${e.tile.kvBlock}${e.atomic ? ' (atomic add)' : ''}`;
    case 'dk':
      return `dK block ${e.tile.kvBlock} += dSᵀ·Q (${rowsOf(e)})`;
    case 'dqconvert':
      return `Convert dQ tile ${e.tile.qBlock} (${rowsOf(e)}) from the fp32 accumulator`;
  }
}

/** Who runs the step, where the algorithm models it: "warpgroup 1", "split 2". */
export function stepActor(e: TraceEvent): string[] {
  const out: string[] = [];
  if (e.split !== undefined) out.push(`split ${e.split}`);
  if (e.warpgroup !== undefined) out.push(`warpgroup ${e.warpgroup}`);
  else if (e.warp !== undefined) out.push(`warp ${e.warp}`);
  if (e.role !== undefined) out.push(`${e.role} role`);
  return out;
}
