import { type Stats, statSync } from "node:fs";

/**
 * What is at `p`, or `undefined` when nothing is: the path or one of its folders does not exist
 * (ENOENT, ENOTDIR). Any other failure (EACCES, ELOOP, ...) is thrown, so the loader reports
 * the real cause instead of "not found".
 */
function statOrUndefined(p: string): Stats | undefined {
  try {
    return statSync(p, { throwIfNoEntry: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    throw error;
  }
}

/** True when `p` is a file (following links); false when it is something else or absent. */
export function isFile(p: string): boolean {
  return statOrUndefined(p)?.isFile() ?? false;
}

/** True when `p` is a folder (following links); false when it is something else or absent. */
export function isDirectory(p: string): boolean {
  return statOrUndefined(p)?.isDirectory() ?? false;
}
