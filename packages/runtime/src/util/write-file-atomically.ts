import { randomBytes } from "node:crypto";
import { type FileHandle, open, rename, unlink } from "node:fs/promises";

/**
 * Writes `file` so that a reader finds its old content or its new content, never a part of it:
 * the bytes go to a temporary file beside it (`<file>.<pid>.<random>.tmp`), are fsynced, and the
 * temporary file is renamed over `file`. A failed step removes the temporary file and rethrows.
 * A process that dies mid-write leaves the temporary file behind, in the folder of the checkpoint
 * being written, which is discarded with it.
 *
 * Why not the `write-file-atomic` package: while a write is in progress it holds `signal-exit`'s
 * signal listeners, and `signal-exit` sends a SIGTERM again, this time unhandled, when it finds
 * no other listener for it. An application that stops on `process.once("SIGTERM", …)` has its
 * listener removed before `signal-exit`'s runs, so a planned stop that came during a checkpoint
 * write ended the process by the signal instead of by its own handler.
 */
export async function writeFileAtomically(file: string, data: string | Uint8Array): Promise<void> {
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  let handle: FileHandle | undefined;
  try {
    handle = await open(temporary, "wx");
    await handle.writeFile(data);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temporary, file);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
}
