import { randomUUID } from "node:crypto";
import { mkdir, readFile, realpath, rename, rm, writeFile } from "node:fs/promises";
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
 *
 * A path read back from etcd is followed only inside the folder its store writes to (after
 * resolving `..` and symbolic links): a pointer aimed elsewhere (a damaged or forged key) is
 * refused with a HighAvailabilityStateError, and nothing outside is read or deleted.
 */
export class StateFiles {
  /** The cluster's folder (absolute). */
  readonly root: string;

  constructor(storageDir: string, clusterId: string) {
    // Absolute, so that the paths in etcd mean the same to every job manager.
    this.root = path.resolve(storageDir, clusterId);
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
   * Checks that the file etcd key `key` points to lies inside `folder` (relative to the root),
   * after resolving `..` and symbolic links; resolves with its real path (the path itself when
   * it does not exist).
   *
   * @throws HighAvailabilityStateError naming the key and the path when it lies outside.
   */
  async confine(key: string, file: string, folder: string): Promise<string> {
    const base = path.join(this.root, folder);
    const refuse = () =>
      new HighAvailabilityStateError(
        `etcd key ${key} points to ${file}, which is outside ${base}${path.sep}: refused, nothing outside the cluster's folder is read or deleted (is the key damaged, or was it written by hand?)`,
      );
    const resolved = path.resolve(file);
    if (!isInside(base, resolved)) throw refuse();
    const realBase = await realOrUndefined(base);
    // No folder yet: the file cannot exist either, and reading it fails as missing.
    if (realBase === undefined) return resolved;
    const real =
      (await realOrUndefined(resolved)) ??
      path.join(
        (await realOrUndefined(path.dirname(resolved))) ?? path.dirname(resolved),
        path.basename(resolved),
      );
    if (!isInside(realBase, real)) throw refuse();
    return real;
  }

  /**
   * Reads the record etcd key `key` points to, which must lie inside `folder`.
   *
   * @throws HighAvailabilityStateError naming `key` and the file when it lies outside the
   *   folder, is missing or is not JSON.
   */
  async read(key: string, file: string, folder: string): Promise<JsonValue> {
    const real = await this.confine(key, file, folder);
    let text: string;
    try {
      text = await readFile(real, "utf8");
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

  /**
   * Removes the file etcd key `key` pointed to, which must lie inside `folder`; one that is gone
   * already is fine.
   *
   * @throws HighAvailabilityStateError naming the key and the path when it lies outside.
   */
  async remove(key: string, file: string, folder: string): Promise<void> {
    await rm(await this.confine(key, file, folder), { force: true });
  }

  /** Removes a file this process just wrote (its pointer never reached etcd). */
  async discard(file: string): Promise<void> {
    await rm(file, { force: true });
  }

  /** Removes a folder under the root (or, without one, the whole cluster's folder). */
  async removeFolder(folder = ""): Promise<void> {
    await rm(path.join(this.root, folder), { recursive: true, force: true });
  }
}

/** Whether `candidate` lies strictly inside `folder` (both absolute and normalized). */
function isInside(folder: string, candidate: string): boolean {
  const relative = path.relative(folder, candidate);
  return relative !== "" && relative.split(path.sep)[0] !== ".." && !path.isAbsolute(relative);
}

async function realOrUndefined(file: string): Promise<string | undefined> {
  try {
    return await realpath(file);
  } catch {
    return undefined;
  }
}
