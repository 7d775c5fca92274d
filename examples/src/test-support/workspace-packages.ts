import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { REPO } from "./markdown-code-blocks.js";

/** What the tests read of a package's package.json. */
export interface WorkspaceManifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly bin?: Readonly<Record<string, string>>;
  readonly dependencies?: Readonly<Record<string, string>>;
}

/** The package.json of the package in `packages/<folder>`. */
export function manifestOf(folder: string): WorkspaceManifest {
  return JSON.parse(
    readFileSync(path.join(REPO, "packages", folder, "package.json"), "utf8"),
  ) as WorkspaceManifest;
}

/** The folders under `packages/` of every package a release publishes (not `private`). */
export const PUBLISHABLE_PACKAGES: readonly string[] = readdirSync(path.join(REPO, "packages"), {
  withFileTypes: true,
})
  .filter(
    (entry) =>
      entry.isDirectory() && existsSync(path.join(REPO, "packages", entry.name, "package.json")),
  )
  .map((entry) => entry.name)
  .filter((folder) => manifestOf(folder).private !== true)
  .sort();

/**
 * `folders` and every Sluice package they depend on at run time (`dependencies`, not dev
 * dependencies), as folder names: what an install of those packages brings.
 */
export function sluiceDependencyClosure(folders: readonly string[]): string[] {
  const closure = new Set<string>();
  const visit = (folder: string) => {
    if (closure.has(folder)) return;
    closure.add(folder);
    for (const dependency of Object.keys(manifestOf(folder).dependencies ?? {})) {
      if (dependency.startsWith("@sluice/")) visit(dependency.slice("@sluice/".length));
    }
  };
  for (const folder of folders) visit(folder);
  return [...closure].sort();
}

/** True when a source file of `src` has no compiled counterpart in `dist` at least as new. */
function stale(src: string, dist: string): boolean {
  for (const entry of readdirSync(src, { withFileTypes: true })) {
    const file = path.join(src, entry.name);
    if (entry.isDirectory()) {
      if (stale(file, path.join(dist, entry.name))) return true;
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) {
      const output = path.join(dist, entry.name.replace(/\.ts$/, ".js"));
      if (!existsSync(output) || statSync(output).mtimeMs < statSync(file).mtimeMs) return true;
    }
  }
  return false;
}

/**
 * Builds the packages `names` (folders under `packages/`, with the packages they depend on) when
 * the dist/ of one of them is missing or older than its sources.
 */
export function buildWorkspacePackagesIfStale(names: readonly string[]): void {
  const packages = names.map((name) => path.join(REPO, "packages", name));
  if (!packages.some((dir) => stale(path.join(dir, "src"), path.join(dir, "dist")))) return;
  const build = spawnSync(
    "pnpm",
    [
      "exec",
      "turbo",
      "run",
      "build",
      ...names.map((name) => `--filter=@sluice/${name}`),
      "--output-logs=errors-only",
    ],
    { cwd: REPO, encoding: "utf8" },
  );
  if (build.status !== 0) {
    throw new Error(`building the packages failed:\n${build.stdout}\n${build.stderr}`);
  }
}
