import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigurationError, IllegalStateError } from "@sluice/core";

/** Prefix of the folder a worker creates in each temporary directory. */
const FOLDER_PREFIX = "sluice-netty-shuffle-";

/**
 * The folders a worker writes blocking partitions to (Flink's FileChannelManager): one folder
 * with an unguessable name (`mkdtemp`, mode 0700) in each of `io.tmp.dirs`, created when the
 * first file is needed. New files go to the folders in turn, spreading partitions over disks.
 * `close()` waits for the deletions still running and removes the folders.
 */
export class FileChannelManager {
  private readonly tmpDirs: readonly string[];
  private folders: string[] | undefined;
  private next = 0;
  private readonly pending = new Set<Promise<void>>();
  private readonly failures: Error[] = [];
  private closed = false;

  /** @param tmpDirs the configured temporary directories; empty means the system's. */
  constructor(tmpDirs: readonly string[]) {
    this.tmpDirs = tmpDirs.length > 0 ? tmpDirs : [tmpdir()];
  }

  /** A new, unique base path (no suffix) for one partition's files. */
  createChannel(): string {
    if (this.closed) throw new IllegalStateError("FileChannelManager is closed");
    const folders = this.getFolders();
    const folder = folders[this.next++ % folders.length] as string;
    return join(folder, randomBytes(16).toString("hex"));
  }

  /** The worker's folders, created on first call. */
  getFolders(): readonly string[] {
    if (this.folders !== undefined) return this.folders;
    const folders: string[] = [];
    for (const dir of this.tmpDirs) {
      try {
        mkdirSync(dir, { recursive: true });
        folders.push(mkdtempSync(join(dir, FOLDER_PREFIX)));
      } catch (cause) {
        throw new ConfigurationError(
          `cannot create a folder for blocking partitions in '${dir}' ('io.tmp.dirs'): ${(cause as Error).message}`,
          { cause },
        );
      }
    }
    this.folders = folders;
    return folders;
  }

  /** Tracks asynchronous clean-up (a partition deleting its files) until `close()`. */
  track(work: Promise<void>): void {
    const tracked = work.then(
      () => undefined,
      (error: unknown) => {
        this.failures.push(error as Error);
      },
    );
    this.pending.add(tracked);
    void tracked.then(() => this.pending.delete(tracked));
  }

  /**
   * Waits for tracked clean-ups, then removes every folder with whatever is left in it. Rejects
   * with the first clean-up failure, after the folders were removed. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.pending.size > 0) await Promise.all([...this.pending]);
    for (const folder of this.folders ?? []) await rm(folder, { recursive: true, force: true });
    const [first] = this.failures;
    if (first !== undefined) throw first;
  }
}
