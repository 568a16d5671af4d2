// Writing the CLI's outputs so that a failure leaves nothing behind: every file goes into
// a temporary folder next to its target and is renamed into place only once all are
// complete. Existing outputs are replaced only with --force, inputs never; special files
// (FIFOs, devices, sockets, /proc, /sys) are refused before anything is read or written.

import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { ArgsError } from './args.ts';

/** The file operations outputs go through; tests replace members to fail a write part-way (a full disk). */
export const outputFs = {
  writeFile: (path: string, data: Uint8Array | string): Promise<void> => fsp.writeFile(path, data),
  mkdir: async (path: string): Promise<void> => {
    await fsp.mkdir(path, { recursive: true });
  },
  rename: (from: string, to: string): Promise<void> => fsp.rename(from, to),
  createWriteStream: (path: string): fs.WriteStream => fs.createWriteStream(path, { flags: 'wx' }),
};

const TEMP_PREFIX = '.flashscope-partial-';

/** Kernel pseudo-filesystems: reading or writing there can block or spin, never yields a tensor. */
function isPseudoFs(real: string): boolean {
  return ['/proc', '/sys', '/dev'].some((root) => real === root || real.startsWith(root + sep));
}

function kindOf(st: fs.Stats): string | undefined {
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return undefined;
}

/** Refuses an input that is not a plain, readable file, before it is opened (a FIFO would block the open forever). */
export function checkInputPath(option: string, path: string): void {
  let st: fs.Stats;
  try {
    st = fs.statSync(path);
  } catch {
    // A missing or unreadable file is reported by the reader, with its own message.
    return;
  }
  const special = kindOf(st);
  if (special) throw new ArgsError(`${option} ${path}: is ${special}, not a tensor file`);
  if (st.isDirectory()) throw new ArgsError(`${option} ${path}: is a folder, not a tensor file`);
  if (isPseudoFs(fs.realpathSync(path))) throw new ArgsError(`${option} ${path}: is a kernel file (/proc, /sys, /dev), not a tensor file`);
}

/** The nearest ancestor of `path` (or `path` itself) that exists. */
function existingAncestor(path: string): string {
  let p = resolve(path);
  while (!fs.existsSync(p)) {
    const up = dirname(p);
    if (up === p) break;
    p = up;
  }
  return p;
}

function lstatOrUndefined(path: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(path);
  } catch {
    return undefined;
  }
}

function realOrResolved(path: string): string {
  try {
    return fs.realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function within(child: string, parent: string): boolean {
  const r = relative(parent, child);
  return r === '' || (!r.startsWith('..') && !r.startsWith(sep) && r !== '..');
}

export interface OutputPlan {
  /** The final paths, all in one folder (the run's DIR/<algo> folders, or the trace's file). */
  targets: string[];
  /** The option that named them, for messages. */
  option: string;
  force: boolean;
  /** Input files (option and path): never overwritten, not even with --force. */
  inputs: { option: string; path: string }[];
}

/** Checks targets before any work: special places, existing outputs without --force, inputs in the way. */
export function checkOutputs(plan: OutputPlan): void {
  const parent = dirname(resolve(plan.targets[0]));
  const anchor = existingAncestor(parent);
  const anchorStat = fs.statSync(anchor);
  if (!anchorStat.isDirectory()) throw new ArgsError(`${plan.option}: ${anchor} is not a folder`);
  if (isPseudoFs(realOrResolved(anchor)))
    throw new ArgsError(`${plan.option}: ${anchor} is a kernel file system (/proc, /sys, /dev); write outputs to a plain folder`);
  for (const target of plan.targets) {
    const st = lstatOrUndefined(target);
    if (!st) continue;
    const special = kindOf(st);
    if (special) throw new ArgsError(`${plan.option}: ${target} is ${special}; write outputs to a plain file or folder`);
    const real = realOrResolved(target);
    for (const input of plan.inputs) {
      if (within(realOrResolved(input.path), real)) {
        throw new ArgsError(
          `${plan.option}: writing ${target} would overwrite the input ${input.option} ${input.path}; choose another output`,
        );
      }
    }
    if (!plan.force) throw new ArgsError(`${plan.option}: ${target} already exists; pass --force to replace it`);
  }
}

/** Outputs being written into a temporary folder; commit() moves them into place, discard() removes them. */
export class StagedOutputs {
  private constructor(
    private readonly plan: OutputPlan,
    private readonly anchor: string,
    private readonly temp: string,
  ) {}

  static async begin(plan: OutputPlan): Promise<StagedOutputs> {
    checkOutputs(plan);
    const anchor = existingAncestor(dirname(resolve(plan.targets[0])));
    const temp = await fsp.mkdtemp(join(anchor, TEMP_PREFIX));
    return new StagedOutputs(plan, anchor, temp);
  }

  /** Where a target (or a file inside a target folder) is written before the commit. */
  path(target: string): string {
    return join(this.temp, relative(this.anchor, resolve(target)));
  }

  async writeFile(target: string, data: Uint8Array | string): Promise<void> {
    const p = this.path(target);
    await outputFs.mkdir(dirname(p));
    await outputFs.writeFile(p, data);
  }

  /** Moves every target into place: each rename is atomic, and a replaced output is removed only after its successor is in place. */
  async commit(): Promise<void> {
    const parent = dirname(resolve(this.plan.targets[0]));
    // Folders that did not exist move as one: the first missing folder below the anchor.
    const moves =
      parent === this.anchor ? this.plan.targets.map((t) => resolve(t)) : [join(this.anchor, relative(this.anchor, parent).split(sep)[0])];
    const replaced = join(this.temp, '.replaced');
    const done: { to: string; from: string; old?: string }[] = [];
    try {
      for (const to of moves) {
        const from = this.path(to);
        if (!fs.existsSync(from)) continue;
        let old: string | undefined;
        if (lstatOrUndefined(to)) {
          await outputFs.mkdir(replaced);
          old = join(replaced, basename(to));
          await outputFs.rename(to, old);
        }
        done.push({ to, from, old });
        await outputFs.rename(from, to);
      }
    } catch (e) {
      // Put back what had moved, so a failed commit changes nothing.
      for (const m of done.reverse()) {
        if (fs.existsSync(m.to) && !fs.existsSync(m.from)) await fsp.rename(m.to, m.from).catch(() => undefined);
        if (m.old) await fsp.rename(m.old, m.to).catch(() => undefined);
      }
      throw e;
    }
    await fsp.rm(this.temp, { recursive: true, force: true });
  }

  /** A stream writing one target's staged file. */
  async stream(target: string): Promise<fs.WriteStream> {
    const p = this.path(target);
    await outputFs.mkdir(dirname(p));
    return outputFs.createWriteStream(p);
  }

  async discard(): Promise<void> {
    await fsp.rm(this.temp, { recursive: true, force: true });
  }

  /** Runs `write` against the staged outputs and commits; any failure removes every staged file and rethrows. */
  static async write(plan: OutputPlan, write: (out: StagedOutputs) => Promise<void>): Promise<void> {
    const staged = await StagedOutputs.begin(plan);
    try {
      await write(staged);
      await staged.commit();
    } catch (e) {
      await staged.discard();
      throw e;
    }
  }
}

/** Options that name input files, in every command. */
const INPUT_OPTIONS = [
  'q',
  'k',
  'v',
  'alibi-slopes',
  'sink',
  'do',
  'cu-seqlens-q',
  'cu-seqlens-k',
  'k-cache',
  'v-cache',
  'block-table',
  'cache-seqlens',
];

/** The input files the arguments name (a safetensors spec without its :NAME), for checkOutputs. */
export function inputFilesOf(a: Record<string, unknown>): { option: string; path: string }[] {
  return INPUT_OPTIONS.filter((o) => typeof a[o] === 'string').map((o) => ({
    option: `--${o}`,
    path: (a[o] as string).replace(/(\.safetensors):[^/]*$/i, '$1'),
  }));
}

/** Stages every file (path and contents), then commits them together. */
export async function writeOutputs(plan: OutputPlan, files: [string, Uint8Array | string][]): Promise<void> {
  await StagedOutputs.write(plan, async (staged) => {
    for (const [path, data] of files) await staged.writeFile(path, data);
  });
}
