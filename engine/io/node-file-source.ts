// A ByteSource over a file on disk (Node only: the CLI and tests). Kept apart from
// byte-source.ts so that browser bundles never see node:fs.

import { open, type FileHandle } from 'node:fs/promises';
import { basename } from 'node:path';
import { checkRange, TensorFileError, type ByteSource } from './byte-source.ts';

export class NodeFileSource implements ByteSource {
  private constructor(
    private readonly handle: FileHandle,
    readonly size: number,
    readonly name: string,
  ) {}

  static async open(path: string): Promise<NodeFileSource> {
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (e) {
      throw new TensorFileError(`cannot open ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
    }
    const st = await handle.stat();
    if (!st.isFile()) {
      await handle.close();
      throw new TensorFileError(`${path} is not a regular file`);
    }
    return new NodeFileSource(handle, st.size, basename(path));
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.handle.read(out, done, length - done, offset + done);
      if (bytesRead === 0) throw new TensorFileError(`${this.name}: file shrank while reading`);
      done += bytesRead;
    }
    return out;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** Opens a file, hands the source to `f`, and always closes it. */
export async function withFileSource<T>(path: string, f: (src: ByteSource) => Promise<T>): Promise<T> {
  const src = await NodeFileSource.open(path);
  try {
    return await f(src);
  } finally {
    await src.close();
  }
}
