import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root folder. */
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

/** Folders of test code only, which the builds leave out. */
const TEST_ONLY = new Set(["test-support", "chaos"]);

/** True when some source file of `src` has no compiled counterpart in `dist` at least as new. */
function staleOutput(src: string, dist: string): boolean {
  for (const entry of readdirSync(src, { withFileTypes: true })) {
    const file = path.join(src, entry.name);
    if (entry.isDirectory()) {
      if (TEST_ONLY.has(entry.name)) continue;
      if (staleOutput(file, path.join(dist, entry.name))) return true;
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) {
      const output = path.join(dist, entry.name.replace(/\.ts$/, ".js"));
      if (!existsSync(output) || statSync(output).mtimeMs < statSync(file).mtimeMs) return true;
    }
  }
  return false;
}

/**
 * Builds the workspace package `name` and what it depends on (turbo) when the `dist/` of one of
 * `folders` (relative to the repository) is older than its sources or missing: child processes
 * run compiled JavaScript (for a `beforeAll`).
 *
 * @throws Error with the build's output when it fails.
 */
export function buildIfStale(name: string, folders: readonly string[]): void {
  const stale = folders.some((folder) =>
    staleOutput(path.join(REPO, folder, "src"), path.join(REPO, folder, "dist")),
  );
  if (!stale) return;
  const build = spawnSync(
    "pnpm",
    ["exec", "turbo", "run", "build", `--filter=${name}...`, "--output-logs=errors-only"],
    { cwd: REPO, encoding: "utf8" },
  );
  if (build.status !== 0) {
    throw new Error(`building ${name} failed:\n${build.stdout}\n${build.stderr}`);
  }
}
