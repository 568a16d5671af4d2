// Random-access byte sources. Tensor file parsers read only what they need (a header,
// then the slices a view asks for), so a multi-gigabyte file never has to sit in memory:
// in the browser a source wraps File.slice, in Node a file handle, in tests a buffer.

export interface ByteSource {
  /** Total size in bytes. */
  readonly size: number;
  /** A name for messages (file name), when known. */
  readonly name?: string;
  /** Exactly `length` bytes starting at `offset`; rejects when the range leaves the source. */
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** Everything that can go wrong reading a tensor file; the message names what was found. */
export class TensorFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TensorFileError';
  }
}

export function checkRange(src: ByteSource, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > src.size) {
    throw new TensorFileError(
      `${src.name ?? 'file'}: read of ${length} bytes at offset ${offset} goes past the end (file is ${src.size} bytes; truncated?)`,
    );
  }
}

/** A source over bytes already in memory. */
export class MemorySource implements ByteSource {
  readonly size: number;
  constructor(
    private readonly bytes: Uint8Array,
    readonly name?: string,
  ) {
    this.size = bytes.length;
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    return this.bytes.subarray(offset, offset + length);
  }
}

/** A source over a Blob/File (browser or Worker): reads go through Blob.slice, so only the slices asked for are loaded. */
export class BlobSource implements ByteSource {
  readonly size: number;
  readonly name?: string;
  constructor(
    private readonly blob: Blob,
    name?: string,
  ) {
    this.size = blob.size;
    this.name = name ?? (blob as { name?: string }).name;
  }
  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    try {
      return new Uint8Array(await this.blob.slice(offset, offset + length).arrayBuffer());
    } catch {
      // The browser's own text blames permissions whatever the cause (a file moved, changed or too large a slice).
      throw new TensorFileError(
        `${this.name ?? 'file'}: ${length} bytes at offset ${offset} could not be read (was the file moved, changed or deleted since it was chosen?); choose the file again`,
      );
    }
  }
}
