// Files given to the debugger's Load tensors dialog that describe a serving layout (integer
// offsets, a block table, cache lengths) are run on the Serving tab instead: each file's name
// says which tensor it holds (q.npy, cu_seqlens_q.npy, block_table.npy, …).

import { PAGED_ROLES, VARLEN_ROLES, type ServingFiles } from './serving-api.ts';

/** Accepted file names (without extension) per tensor. */
const NAMES: Record<string, string[]> = {
  q: ['q', 'query'],
  k: ['k', 'key'],
  v: ['v', 'value'],
  cu_seqlens_q: ['cu_seqlens_q', 'cu_q', 'cq'],
  cu_seqlens_k: ['cu_seqlens_k', 'cu_k', 'ck'],
  k_cache: ['k_cache', 'kcache', 'kc'],
  v_cache: ['v_cache', 'vcache', 'vc'],
  block_table: ['block_table', 'page_table', 'bt'],
  cache_seqlens: ['cache_seqlens', 'seqlens_k', 'cs'],
};

const stem = (name: string) => name.replace(/\.(npy|safetensors)$/i, '').toLowerCase();

/** Which serving tensor a file holds, by its name; undefined when the name says nothing. */
export function servingRole(name: string): string | undefined {
  const s = stem(name);
  return Object.keys(NAMES).find((r) => NAMES[r].includes(s));
}

/**
 * The files as a serving run's inputs, or a sentence saying which names are missing. The
 * layout is paged when any file is a cache, a block table or cache lengths; else varlen.
 */
export function servingFilesByName(files: readonly File[]): Pick<ServingFiles, 'layout' | 'files'> | { error: string } {
  const byRole: Record<string, File> = {};
  for (const f of files) {
    const r = servingRole(f.name);
    if (r) byRole[r] = f;
  }
  const paged = ['k_cache', 'v_cache', 'block_table', 'cache_seqlens'].some((r) => byRole[r]);
  const roles: readonly string[] = paged ? PAGED_ROLES : VARLEN_ROLES;
  const missing = roles.filter((r) => !byRole[r]);
  if (missing.length > 0) {
    const want = roles.map((r) => `${r}.npy`).join(', ');
    return {
      error: `A ${paged ? 'paged K/V cache' : 'packed varlen batch'} needs files named ${want}; missing: ${missing.map((r) => `${r}.npy`).join(', ')}. Rename them, or pick each tensor under the Serving tab's Load tensors.`,
    };
  }
  return { layout: paged ? 'paged' : 'varlen', files: Object.fromEntries(roles.map((r) => [r, byRole[r]])) };
}
