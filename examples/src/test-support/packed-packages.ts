/**
 * The install helpers the e2e tests started with, when the packages were packed into tarballs.
 * They now publish to the run's test registry (`test-registry.ts`) instead: an application
 * installs the packages by name and version, as from any npm registry, with no tarball, override
 * or other entry in its own configuration.
 */
import { useTestRegistry } from "./test-registry.js";
import {
  buildWorkspacePackagesIfStale,
  PUBLISHABLE_PACKAGES,
  sluiceDependencyClosure,
} from "./workspace-packages.js";

export { buildWorkspacePackagesIfStale } from "./workspace-packages.js";

/**
 * What the embedding guide's application installs: the packages it lists (`@sluice/cluster`,
 * `@sluice/runtime` and the two shuffle plugins it configures) and every Sluice package they
 * depend on.
 */
export const PUBLISHED_PACKAGES: readonly string[] = sluiceDependencyClosure([
  "cluster",
  "runtime",
  "shuffle-tcp",
  "shuffle-ws",
]);

/** Builds the published packages when their dist/ is missing or older than their sources. */
export function buildPackagesIfStale(): void {
  buildWorkspacePackagesIfStale(PUBLISHED_PACKAGES);
}

/**
 * Publishes every package to the run's test registry (once per run) and routes this process's
 * npm and pnpm commands to it for the `@sluice` scope. No tarball is written: `destination` stays
 * empty, and the result is empty.
 *
 * @deprecated the packages install from the test registry; call `useTestRegistry()`.
 */
export function packPackages(_destination: string): string[] {
  useTestRegistry();
  return [];
}

/**
 * Publishes every package (not only `names`: their dependencies must be there too) to the run's
 * test registry (once per run) and routes this process's npm and pnpm commands to it for the
 * `@sluice` scope. No tarball is written: the result is empty.
 *
 * @deprecated the packages install from the test registry; call `useTestRegistry()`.
 */
export function packWorkspacePackages(_names: readonly string[], _destination: string): string[] {
  useTestRegistry();
  return [];
}

/** Every package a release publishes (folders under `packages/`). */
export { PUBLISHABLE_PACKAGES };
