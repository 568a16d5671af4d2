// The one check every numeric CLI option goes through: a finite number, an integer where
// the option counts something, inside the option's range, with the option named.

export class NumericOptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArgsError';
  }
}

export interface NumericRange {
  integer: boolean;
  min: number;
  max: number;
  /** The lower bound itself is not allowed (softcap > 0). */
  minExclusive?: boolean;
}

/** Sizes larger than any typed array can hold are refused here; the size model refuses what merely does not fit. */
const DIM_MAX = 2 ** 31 - 1;

const int = (min: number, max = DIM_MAX): NumericRange => ({ integer: true, min, max });

/** Ranges by option name (without the dashes); options not listed only need to be finite. */
export const NUMERIC_RANGES: Record<string, NumericRange> = {
  b: int(1),
  hq: int(1),
  hk: int(1),
  nq: int(1),
  nk: int(1),
  d: int(1),
  dv: int(1),
  'block-m': int(1),
  'block-n': int(1),
  'sram-bytes': int(16),
  seed: int(0, 2 ** 32 - 1),
  stages: int(1, 64),
  splits: int(1, 65536),
  'max-bytes': int(1, Number.MAX_SAFE_INTEGER),
  softcap: { integer: false, min: 0, max: Number.MAX_VALUE, minExclusive: true },
};

function describeRange(r: NumericRange): string {
  if (!r.integer && r.max === Number.MAX_VALUE) return r.minExclusive ? `a finite number > ${r.min}` : 'a finite number';
  return `an integer from ${r.min} to ${r.max}`;
}

/** Parses one option value; `integer` applies to options missing from the range table. */
export function parseNumericOption(name: string, raw: string, integer: boolean): number {
  const n = raw.trim() === '' ? Number.NaN : Number(raw);
  const r = Object.hasOwn(NUMERIC_RANGES, name) ? NUMERIC_RANGES[name] : undefined;
  const wantInt = r ? r.integer : integer;
  if (!Number.isFinite(n)) throw new NumericOptionError(`--${name} needs ${wantInt ? 'an integer' : 'a finite number'}, got '${raw}'`);
  if (wantInt && !Number.isInteger(n)) throw new NumericOptionError(`--${name} needs an integer, got '${raw}'`);
  if (r && (n < r.min || n > r.max || (r.minExclusive && n === r.min))) {
    throw new NumericOptionError(`--${name} must be ${describeRange(r)}, got '${raw}'`);
  }
  return n;
}
