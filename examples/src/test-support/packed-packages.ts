import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { REPO } from "./markdown-code-blocks.js";

/** What an application installs: the packages it imports and the ones they depend on. */
export const PUBLISHED_PACKAGES = [
  "core",
  "runtime-api",
  "network",
  "runtime",
  "cluster",
  "shuffle-tcp",
  "shuffle-ws",
  // @sluice/cluster depends on these (the remote shuffle, HA on etcd, the Prometheus reporter).
  "shuffle-remote",
  "ha-etcd",
  "metrics-prometheus",
] as const;

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

/** Builds the published packages when their dist/ is missing or older than their sources. */
export function buildPackagesIfStale(): void {
  buildWorkspacePackagesIfStale(PUBLISHED_PACKAGES);
}

/**
 * Packs every published package with `pnpm pack` into `destination`, as a release would, and
 * returns the tarballs' file names (`sluice-cluster-0.1.0.tgz`).
 */
export function packPackages(destination: string): string[] {
  return packWorkspacePackages(PUBLISHED_PACKAGES, destination);
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

/**
 * Packs the packages `names` (folders under `packages/`) with `pnpm pack` into `destination`, as a
 * release would, and returns the file names of every tarball there.
 */
export function packWorkspacePackages(names: readonly string[], destination: string): string[] {
  for (const name of names) {
    execFileSync("pnpm", ["pack", "--pack-destination", destination], {
      cwd: path.join(REPO, "packages", name),
      stdio: ["ignore", "ignore", "pipe"],
    });
  }
  return readdirSync(destination).filter((file) => file.endsWith(".tgz"));
}
