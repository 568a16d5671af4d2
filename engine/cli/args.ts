// A small, strict option parser for the CLI commands: `--name value`, `--name=value`,
// boolean flags and repeatable options. Unknown options and missing or malformed values
// are errors that name the option, never silently ignored.

import { parseNumericOption } from './numeric-options.ts';

export type OptionKind = 'string' | 'number' | 'int' | 'flag' | 'repeat';

export interface OptionSpec {
  [name: string]: OptionKind;
}

export class ArgsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArgsError';
  }
}

export type ParsedArgs = Record<string, string | number | boolean | string[] | undefined>;

export function parseArgs(argv: readonly string[], spec: OptionSpec): ParsedArgs {
  const out: ParsedArgs = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new ArgsError(`unexpected argument '${arg}' (options start with --)`);
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!kind) throw new ArgsError(`unknown option --${name}; see --help`);
    if (kind === 'flag') {
      if (eq >= 0) throw new ArgsError(`--${name} takes no value`);
      out[name] = true;
      continue;
    }
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      if (i + 1 >= argv.length) throw new ArgsError(`--${name} needs a value`);
      value = argv[++i];
    }
    if (kind === 'repeat') {
      const values = (out[name] as string[] | undefined) ?? [];
      values.push(value);
      out[name] = values;
    } else if (kind === 'string') out[name] = value;
    else out[name] = parseNumericOption(name, value, kind === 'int');
  }
  return out;
}

export const str = (a: ParsedArgs, k: string): string | undefined => a[k] as string | undefined;
export const num = (a: ParsedArgs, k: string): number | undefined => a[k] as number | undefined;
export const flag = (a: ParsedArgs, k: string): boolean => a[k] === true;
export const list = (a: ParsedArgs, k: string): string[] => (a[k] as string[] | undefined) ?? [];
