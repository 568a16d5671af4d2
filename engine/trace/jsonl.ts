// JSONL encoding of trace events. JSON has no Infinity/NaN; a running max starts at
// -Infinity, so non-finite numbers travel as the strings "Infinity", "-Infinity", "NaN".

export function encodeJsonValue(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (ArrayBuffer.isView(value) && !(value instanceof DataView))
    return Array.from(value as unknown as ArrayLike<number>, (n) => (Number.isFinite(n) ? n : String(n)));
  return value;
}

export function decodeJsonValue(_key: string, value: unknown): unknown {
  if (value === 'Infinity') return Infinity;
  if (value === '-Infinity') return -Infinity;
  if (value === 'NaN') return NaN;
  return value;
}

export function toJsonLine(event: unknown): string {
  return JSON.stringify(event, encodeJsonValue);
}

export function fromJsonLine<T>(line: string): T {
  return JSON.parse(line, decodeJsonValue) as T;
}
