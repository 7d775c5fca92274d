import { randomBytes } from "node:crypto";
import { closeSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { SerializationError } from "../errors.js";

/** Suffix of spill files, as in Flink: `<32 hex digits>.inputchannel`. */
export const SPILL_FILE_SUFFIX = ".inputchannel";

/**
 * The temp file one record above the spilling threshold is appended to as its bytes arrive, and
 * read back from once it is complete (the file of Flink's `SpanningWrapper`). The calls are
 * synchronous (`fs.*Sync`): they block the event loop, but only for records above the threshold,
 * where the disk write dominates anyway. Every failure is a {@link SerializationError} naming the
 * file. Internal to the spanning record deserializer.
 */
export class SpillFile {
  private constructor(
    /** Where the file is. */
    readonly path: string,
    private readonly fd: number,
  ) {}

  /**
   * Creates a new file `<random>.inputchannel` in one of `directories`, picked at random (Flink
   * spreads spill files over `io.tmp.dirs` the same way).
   */
  static create(directories: readonly string[], recordLength: number): SpillFile {
    const dir = directories[Math.floor(Math.random() * directories.length)] as string;
    const path = join(dir, `${randomBytes(16).toString("hex")}${SPILL_FILE_SUFFIX}`);
    try {
      // "wx+": never reuse an existing file; 0o600: the record may hold user data.
      return new SpillFile(path, openSync(path, "wx+", 0o600));
    } catch (error) {
      throw new SerializationError(
        `cannot create spill file ${path} for a ${recordLength}-byte record: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** Writes `count` bytes of `source` from `from` at `position` in the file. */
  write(source: Buffer, from: number, count: number, position: number): void {
    try {
      let written = 0;
      while (written < count) {
        written += writeSync(this.fd, source, from + written, count - written, position + written);
      }
    } catch (error) {
      throw new SerializationError(
        `cannot write to spill file ${this.path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** Reads the first `count` bytes of the file into `target` at `offset`. */
  read(target: Buffer, offset: number, count: number): void {
    let read = 0;
    try {
      while (read < count) {
        const n = readSync(this.fd, target, offset + read, count - read, read);
        if (n === 0) break;
        read += n;
      }
    } catch (error) {
      throw new SerializationError(
        `cannot read spill file ${this.path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (read < count) {
      throw new SerializationError(
        `spill file ${this.path} holds ${read} bytes, expected ${count}: it was truncated`,
      );
    }
  }

  /** Closes and removes the file; both are tried even when the first fails. */
  delete(): void {
    let failure: unknown;
    try {
      closeSync(this.fd);
    } catch (error) {
      failure = error;
    }
    try {
      unlinkSync(this.path);
    } catch (error) {
      failure ??= error;
    }
    if (failure !== undefined) {
      throw new SerializationError(
        `cannot delete spill file ${this.path}: ${(failure as Error).message}`,
        { cause: failure },
      );
    }
  }
}
