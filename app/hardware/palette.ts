// Colours of the hardware views: tensors in memory, units on the timeline. Fixed hues that
// read on both themes.

export const TENSOR_COLOUR: Record<string, string> = {
  Q: '#4f8fe0',
  K: '#e0923a',
  V: '#4caf6a',
  O: '#a66be0',
  S: '#2aa8a8',
  P: '#d9578f',
};

/** Tensor of a tile label: "K3" → K, "S0.5" → S, "O1.0" → O. */
export function tensorOf(tile: string): string {
  return /^[A-Z]/.exec(tile)?.[0] ?? '?';
}

export function tensorColour(tile: string): string {
  return TENSOR_COLOUR[tensorOf(tile)] ?? '#888';
}

/** Unit families of the timeline, in legend order. */
export const UNIT_FAMILIES = [
  { id: 'copy', label: 'copy (TMA / cp.async / LDGSTS / store)', colour: '#4f8fe0' },
  { id: 'tensor', label: 'tensor core', colour: '#e0923a' },
  { id: 'mufu', label: 'exp (MUFU)', colour: '#e05252' },
  { id: 'fma', label: 'FMA pipe', colour: '#4caf6a' },
  { id: 'tmem', label: 'TMEM ↔ registers', colour: '#a66be0' },
  { id: 'sync', label: 'barrier wait', colour: '#7d8590' },
] as const;

export function unitFamily(unit: string): string {
  const base = unit.split('.')[0];
  if (base === 'tma' || base === 'cpasync' || base === 'ldgsts' || base === 'store') return 'copy';
  return base;
}

export function familyColour(f: string): string {
  return UNIT_FAMILIES.find((x) => x.id === f)?.colour ?? '#888';
}
