// Per-sequence geometry for the serving-layout kernels (varlen forward, paged decoding).
//
// The dense kernels read a problem's shape from the uniform block: params.nq, params.nk and
// params.diag = nk − nq (the bottom-right mask alignment), in the kernel body and in the score
// helpers of params.ts (key_visible, block_key_range, score_edge, …). In a packed batch or a
// paged cache every sequence has its own nq and nk, which a workgroup learns from a table in
// a storage buffer once it knows its sequence. The serving kernels are the dense generators'
// text with one change, made here: the shape is a value `geo` — a `let` in the kernel's entry
// point, computed from the table, and an explicit first argument of every helper that reads
// it — instead of the uniform.
//
// Why an argument and not a module-scope variable: WGSL's uniformity analysis treats every
// read of a `var<private>` as possibly non-uniform, so a loop bounded by one could not hold a
// workgroupBarrier. A `let` computed from a read-only storage buffer at a workgroup-uniform
// index stays uniform (checked by Tint), and so do the helpers' results computed from it.

/** The per-sequence shape every serving kernel builds in its entry point. */
export const GEO_WGSL = /* wgsl */ `
// One sequence's shape: query rows, keys, and the bottom-right mask offset nk − nq.
struct Geo { nq: u32, nk: u32, diag: i32 }
fn make_geo(nq: u32, nk: u32) -> Geo { return Geo(nq, nk, i32(nk) - i32(nq)); }
`;

/** The helpers of params.ts that read the shape (directly or through another helper). */
const SHAPE_HELPERS = ['key_visible', 'block_key_range', 'score_edge', 'score_full', 'tile_visible', 'score_mod', 'score_unmasked'];

/**
 * Rewrites a dense kernel's WGSL to take its shape from `geo`: params.nq / nk / diag become
 * geo.nq / geo.nk / geo.diag, the shape helpers gain a first parameter `geo: Geo`, and every
 * call passes the caller's `geo` on. The entry point must declare `let geo` before its first
 * use (the serving kernels' prologues do). Throws if the text still reads the shape from the
 * uniform afterwards, so a kernel edited in a way this does not cover fails loudly.
 */
export function withSequenceGeometry(wgsl: string): string {
  let out = wgsl.replace(/\bparams\.(nq|nk|diag)\b/g, 'geo.$1');
  for (const f of SHAPE_HELPERS) {
    out = out.replace(new RegExp(`\\bfn ${f}\\(`, 'g'), `fn ${f}(geo: Geo, `);
    out = out.replace(new RegExp(`(?<!fn )\\b${f}\\(`, 'g'), `${f}(geo, `);
  }
  // A sequence without keys has no attention at all: engine/layouts writes O = 0 and LSE = −inf
  // for its rows, sink or not (sequence-runner.ts), so its sink is dropped here.
  out = out.replace(/(?<!fn )\bsink_logit\((\w+)\)/g, 'select(NEG_INF, sink_logit($1), geo.nk > 0u)');
  // The struct goes right after the Params block every kernel starts with.
  const at = out.indexOf('const FLAG_ALIBI');
  if (at < 0) throw new Error('withSequenceGeometry: the kernel does not include PARAMS_WGSL');
  out = out.slice(0, at) + GEO_WGSL + out.slice(at);
  if (/\bparams\.(nq|nk|diag)\b/.test(out)) throw new Error('withSequenceGeometry: the shape is still read from params');
  const orphan = functionsReadingGeoUnbound(out);
  if (orphan.length > 0) throw new Error(`withSequenceGeometry: ${orphan.join(', ')} read geo without taking it (add to SHAPE_HELPERS)`);
  return out;
}

/** Helpers (not the entry point, whose prologue declares it) whose body reads `geo` while neither a parameter nor a `let` of theirs binds it. */
export function functionsReadingGeoUnbound(wgsl: string): string[] {
  const out: string[] = [];
  for (const m of wgsl.matchAll(/\bfn (\w+)\(([^)]*)\)[^{]*\{/g)) {
    let depth = 1;
    let i = (m.index ?? 0) + m[0].length;
    const start = i;
    for (; i < wgsl.length && depth > 0; i++) depth += wgsl[i] === '{' ? 1 : wgsl[i] === '}' ? -1 : 0;
    const body = wgsl.slice(start, i);
    if (/@compute[^;{}]*$/.test(wgsl.slice(Math.max(0, (m.index ?? 0) - 200), m.index))) continue;
    if (/\bgeo\b/.test(body) && !/\bgeo\s*:/.test(m[2]) && !/\blet geo\b/.test(body)) out.push(m[1]);
  }
  return out;
}
