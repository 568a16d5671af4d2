// The shape of one CLI command. Commands parse their own arguments (see args.ts) and
// return the process exit code.

export interface CliCommand {
  name: string;
  summary: string;
  /** Full option help, printed for `<command> --help`. */
  help: string;
  run(args: string[]): Promise<number>;
}
