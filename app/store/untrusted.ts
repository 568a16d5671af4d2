// Reading objects that came from outside (a link's JSON): only a value's own properties count,
// so names inherited from Object.prototype (constructor, __proto__, toString…) are never taken
// for fields.

export const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The object's own property `key`, or undefined. */
export function own(x: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(x, key) ? x[key] : undefined;
}

/** Whether `key` is one of the object's own property names. */
export const hasOwnKey = (x: object, key: string): boolean => Object.hasOwn(x, key);

/** The named own properties of `x` (absent or inherited ones are undefined). */
export function pick<K extends string>(x: Record<string, unknown>, keys: readonly K[]): Record<K, unknown> {
  const out = Object.create(null) as Record<K, unknown>;
  for (const k of keys) out[k] = own(x, k);
  return out;
}
