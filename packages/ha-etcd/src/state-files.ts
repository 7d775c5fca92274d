import { randomUUID } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { IllegalArgumentError } from "@sluice/core";
import { HighAvailabilityStateError, type JsonValue } from "@sluice/runtime-api";

/** What a job id or other name used in keys and file names may contain. */
const SAFE_NAME = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * Checks that `name` (a job id) is safe in an etcd key and a file name.
 *
 * @throws IllegalArgumentError naming what it is and the value.
 */
export function checkName(what: string, name: string): string {
  if (!SAFE_NAME.test(name) || name === "." || name === "..") {
    throw new IllegalArgumentError(
      `${what} must be 1 to 200 letters, digits, '.', '_' or '-', got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

/**
 * The high-availability data under `<high-availability.storageDir>/<cluster-id>/`: one JSON file
 * per record, written whole to a temporary name and renamed, so that a reader sees the old file
 * or the new one, never half of one. Only the file's path goes into etcd.
 */
export class StateFiles {
  /** The cluster's folder. */
  readonly root: string;

  constructor(storageDir: string, clusterId: string) {
    this.root = path.join(storageDir, clusterId);
  }

  /** Writes `record` to a new file in `folder` (relative to the root); resolves with its path. */
  async write(folder: string, prefix: string, record: JsonValue): Promise<string> {
    const dir = path.join(this.root, folder);
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, `${prefix}-${randomUUID()}.json`);
    const temporary = `${file}.tmp`;
    await writeFile(temporary, `${JSON.stringify(record)}\n`, { flag: "wx" });
    await rename(temporary, file);
    return file;
  }

  /**
   * Reads the record a pointer names.
   *
   * @throws HighAvailabilityStateError naming `key` and the file when it is missing or not JSON.
   */
  async read(key: string, file: string): Promise<JsonValue> {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      throw new HighAvailabilityStateError(
        `etcd key ${key} points to ${file}, which cannot be read (high-availability.storageDir must be the same folder for every job manager): ${(error as Error).message}`,
        { cause: error },
      );
    }
    try {
      return JSON.parse(text) as JsonValue;
    } catch (error) {
      throw new HighAvailabilityStateError(
        `etcd key ${key} points to ${file}, which is damaged (not JSON): ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** Removes a file; one that is gone already is fine. */
  async remove(file: string): Promise<void> {
    await rm(file, { force: true });
  }

  /** Removes a folder under the root (or, without one, the whole cluster's folder). */
  async removeFolder(folder = ""): Promise<void> {
    await rm(path.join(this.root, folder), { recursive: true, force: true });
  }
}
