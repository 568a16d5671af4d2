// Masks and score mods people use, written in the mask language. A preset is only a way to
// produce text (and aux arrays): what runs is always the text. Queries are aligned
// bottom-right (query i sits at key position i + nk - nq), as FlashAttention aligns causal.

import type { MaskKind } from './mask-language.ts';
import type { MaskSpec } from './mask-spec.ts';
import { standardAlibiSlopes, type AttentionProblem } from './problem.ts';

export interface PresetDims {
  hq: number;
  nq: number;
  nk: number;
}

export interface MaskPresetParam {
  name: string;
  /** Default for a problem of these sizes. */
  default: (d: PresetDims) => number;
  help: string;
  /** Takes a list (document lengths). */
  list?: boolean;
}

export interface MaskPreset {
  id: string;
  kind: MaskKind;
  label: string;
  help: string;
  params: MaskPresetParam[];
  build: (args: number[][], d: PresetDims) => { text: string; aux?: Record<string, number[]> };
}

/** Position of query q_idx among the keys (bottom-right alignment). */
const POS = 'q_idx + (nk - nq)';

function int(v: number, name: string, min: number): number {
  if (!Number.isInteger(v) || v < min) throw new Error(`${name} must be a whole number >= ${min}, got ${v}`);
  return v;
}

/** Document id of each key position from segment lengths (cu_seqlens are their running sums). */
export function documentIds(lengths: number[], nk: number): number[] {
  const ids: number[] = [];
  lengths.forEach((len, doc) => {
    for (let t = 0; t < len && ids.length < nk; t++) ids.push(doc);
  });
  while (ids.length < nk) ids.push(lengths.length);
  return ids;
}

/** Segment lengths from cu_seqlens (0, l0, l0+l1, …). */
export function lengthsFromCuSeqlens(cu: number[]): number[] {
  return cu.slice(1).map((c, i) => c - cu[i]);
}

export const MASK_PRESETS: readonly MaskPreset[] = [
  {
    id: 'causal',
    kind: 'mask_mod',
    label: 'Causal',
    help: 'Each query sees itself and earlier keys.',
    params: [],
    build: () => ({ text: `kv_idx <= ${POS}` }),
  },
  {
    id: 'sliding_window',
    kind: 'mask_mod',
    label: 'Sliding window',
    help: 'Causal, and at most `window` keys back (Mistral, Gemma local layers).',
    params: [{ name: 'window', default: (d) => Math.max(1, Math.floor(d.nk / 4)), help: 'keys back' }],
    build: ([[w]]) => ({ text: `kv_idx <= ${POS} && ${POS} - kv_idx <= ${int(w, 'window', 0)}` }),
  },
  {
    id: 'chunked',
    kind: 'mask_mod',
    label: 'Chunked (Llama 4)',
    help: 'Causal inside fixed chunks of `chunk` tokens (Llama 4 attention_chunk).',
    params: [{ name: 'chunk', default: (d) => Math.max(1, Math.floor(d.nk / 4)), help: 'tokens per chunk' }],
    build: ([[c]]) => ({ text: `floor((${POS}) / ${int(c, 'chunk', 1)}) == floor(kv_idx / ${c}) && kv_idx <= ${POS}` }),
  },
  {
    id: 'document',
    kind: 'mask_mod',
    label: 'Document mask',
    help: 'Packed sequences: a query sees only keys of its own document (doc ids from the lengths).',
    params: [
      {
        name: 'lengths',
        list: true,
        default: (d) => Math.max(1, Math.floor(d.nk / 3)),
        help: 'document lengths (cu_seqlens differences); the rest is one more document',
      },
    ],
    build: ([lengths], d) => ({
      text: `doc[${POS}] == doc[kv_idx]`,
      aux: {
        doc: documentIds(
          lengths.map((l) => int(l, 'length', 1)),
          d.nk,
        ),
      },
    }),
  },
  {
    id: 'prefix_lm',
    kind: 'mask_mod',
    label: 'Prefix-LM',
    help: 'The first `prefix` keys are seen by every query; the rest is causal.',
    params: [{ name: 'prefix', default: (d) => Math.max(1, Math.floor(d.nk / 4)), help: 'prefix length' }],
    build: ([[p]]) => ({ text: `kv_idx < ${int(p, 'prefix', 0)} || kv_idx <= ${POS}` }),
  },
  {
    id: 'longformer',
    kind: 'mask_mod',
    label: 'Global tokens + window (Longformer)',
    help: 'The first `global` tokens see and are seen by all; others see a ±window band.',
    params: [
      { name: 'global', default: () => 2, help: 'global tokens' },
      { name: 'window', default: (d) => Math.max(1, Math.floor(d.nk / 8)), help: 'keys each side' },
    ],
    build: ([[g], [w]]) => ({
      text: `kv_idx < ${int(g, 'global', 0)} || q_idx < ${g} || abs(${POS} - kv_idx) <= ${int(w, 'window', 0)}`,
    }),
  },
  {
    id: 'dilated',
    kind: 'mask_mod',
    label: 'Dilated window',
    help: 'Causal window of `window` keys back, every `dilation`-th key.',
    params: [
      { name: 'window', default: (d) => Math.max(1, Math.floor(d.nk / 2)), help: 'keys back' },
      { name: 'dilation', default: () => 2, help: 'stride' },
    ],
    build: ([[w], [r]]) => ({
      text: `kv_idx <= ${POS} && ${POS} - kv_idx <= ${int(w, 'window', 0)} && (${POS} - kv_idx) % ${int(r, 'dilation', 1)} == 0`,
    }),
  },
  {
    id: 'streaming',
    kind: 'mask_mod',
    label: 'Sink tokens + window (StreamingLLM)',
    help: 'Causal window, plus the first `sinks` keys every query keeps.',
    params: [
      { name: 'sinks', default: () => 4, help: 'sink tokens' },
      { name: 'window', default: (d) => Math.max(1, Math.floor(d.nk / 4)), help: 'keys back' },
    ],
    build: ([[s], [w]]) => ({
      text: `kv_idx <= ${POS} && (kv_idx < ${int(s, 'sinks', 0)} || ${POS} - kv_idx <= ${int(w, 'window', 0)})`,
    }),
  },
  {
    id: 'alibi',
    kind: 'score_mod',
    label: 'ALiBi',
    help: 'A per-head linear penalty on distance (the paper’s slopes, one per query head).',
    params: [],
    build: (_, d) => ({ text: `score - slope[h] * abs(kv_idx - (${POS}))`, aux: { slope: standardAlibiSlopes(d.hq) } }),
  },
  {
    id: 'softcap',
    kind: 'score_mod',
    label: 'Softcap',
    help: 'cap · tanh(score / cap): scores squashed into (−cap, cap) (Gemma 2, Grok).',
    params: [{ name: 'cap', default: () => 30, help: 'cap > 0' }],
    build: ([[c]]) => {
      if (!(Number.isFinite(c) && c > 0)) throw new Error(`cap must be a number > 0, got ${c}`);
      return { text: `${c} * tanh(score / ${c})` };
    },
  },
  {
    id: 'relative_bias',
    kind: 'score_mod',
    label: 'Relative-position bias',
    help: 'A learned-style bias per offset kv_idx − q_idx, read from a table (T5-like).',
    params: [],
    build: (_, d) => ({
      text: 'score + bias[kv_idx - q_idx + (nq - 1)]',
      aux: { bias: Array.from({ length: d.nq + d.nk - 1 }, (_, r) => -0.25 * Math.log1p(Math.abs(r - (d.nq - 1)))) },
    }),
  },
];

/**
 * The problem's causal flag, window and attention chunk as mask_mod text: the causal preset, one
 * bound per window side around the bottom-right-aligned diagonal, and the chunk's same-chunk test.
 * These texts are what the engine runs.
 */
export function builtInMaskTexts(p: Pick<AttentionProblem, 'causal' | 'window' | 'attentionChunk'>): string[] {
  const texts: string[] = [];
  if (p.causal) texts.push(maskPreset('causal')!.build([], { hq: 1, nq: 1, nk: 1 }).text);
  if (p.window && p.window.left >= 0) texts.push(`kv_idx >= ${POS} - ${p.window.left}`);
  if (p.window && p.window.right >= 0) texts.push(`kv_idx <= ${POS} + ${p.window.right}`);
  // Keys from round_down(position, chunk) up to the chunk's end only (hopper/mask.h@0251105a l. 116-120).
  if (p.attentionChunk !== undefined) texts.push(`floor((${POS}) / ${p.attentionChunk}) == floor(kv_idx / ${p.attentionChunk})`);
  return texts;
}

export function maskPreset(id: string): MaskPreset | undefined {
  return MASK_PRESETS.find((p) => p.id === id);
}

/** Builds a preset's text and aux arrays; missing arguments take their defaults. */
export function buildPreset(preset: MaskPreset, args: number[][], d: PresetDims): { text: string; aux?: Record<string, number[]> } {
  const full = preset.params.map((p, i) => (args[i] && args[i].length > 0 ? args[i] : [p.default(d)]));
  return preset.build(full, d);
}

/**
 * Reads `name` or `name:a,b` (a list parameter takes the rest, `document:16,16,32`) as a preset
 * reference; anything else is undefined (mask text).
 */
export function parsePresetRef(ref: string): { preset: MaskPreset; args: number[][] } | undefined {
  const m = /^\s*([a-z_]+)\s*(?::\s*([-0-9.e,\s]*))?$/.exec(ref);
  if (!m) return undefined;
  const preset = maskPreset(m[1]);
  if (!preset) return undefined;
  const nums = (m[2] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
  if (nums.some((n) => !Number.isFinite(n))) throw new Error(`${preset.id}: arguments must be numbers, got '${m[2]}'`);
  const args = preset.params.map((p, i) => (p.list ? nums.slice(i) : nums[i] === undefined ? [] : [nums[i]]));
  if (!preset.params.some((p) => p.list) && nums.length > preset.params.length) {
    throw new Error(
      `${preset.id} takes ${preset.params.length} argument(s) (${preset.params.map((p) => p.name).join(', ') || 'none'}), got ${nums.length}`,
    );
  }
  return { preset, args };
}

/**
 * Merges a mask_mod and a score_mod reference (preset or text) into one MaskSpec; aux arrays of
 * both presets are kept (their names differ).
 */
export function maskSpecFrom(refs: { maskMod?: string; scoreMod?: string }, d: PresetDims): MaskSpec {
  const spec: MaskSpec = {};
  const aux: Record<string, number[]> = {};
  for (const kind of ['maskMod', 'scoreMod'] as const) {
    const ref = refs[kind];
    if (ref === undefined) continue;
    const preset = parsePresetRef(ref);
    if (!preset) {
      spec[kind] = ref;
      continue;
    }
    const want = kind === 'maskMod' ? 'mask_mod' : 'score_mod';
    if (preset.preset.kind !== want) throw new Error(`'${preset.preset.id}' is a ${preset.preset.kind} preset, not a ${want}`);
    const built = buildPreset(preset.preset, preset.args, d);
    spec[kind] = built.text;
    Object.assign(aux, built.aux ?? {});
  }
  if (Object.keys(aux).length > 0) spec.aux = aux;
  return spec;
}
