import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import { REPO } from "./markdown-code-blocks.js";
import { TEST_REGISTRY_RUN, type TestRegistryRun } from "./test-registry-run.js";
import { buildWorkspacePackagesIfStale, PUBLISHABLE_PACKAGES } from "./workspace-packages.js";

const SERVER = fileURLToPath(new URL("./registry-server.mjs", import.meta.url));
/** How long a test file waits for the registry another one is starting and publishing to. */
const START_TIMEOUT_MS = 300_000;

/**
 * A registry on 127.0.0.1 (Verdaccio) with every publishable Sluice package published to it by
 * `pnpm publish`, as a release publishes them: one per vitest run, shared by its test files.
 */
export interface TestRegistry {
  /** Its URL, `http://127.0.0.1:<port>/`. */
  readonly url: string;
  /**
   * The environment of an npm or pnpm command that installs from it: the `@sluice` scope is
   * routed to this registry (as the machine's user configuration would), every other package
   * comes from the usual registry. Nothing goes into the project's own files.
   */
  readonly env: Readonly<Record<string, string>>;
  /** The packages published (folders under `packages/`). */
  readonly published: readonly string[];
  /** The registry's folder, with its storage (`storage/@sluice/<name>/package.json`). */
  readonly folder: string;
}

/** Blocks the calling thread for `ms` (the helpers are synchronous, as their callers are). */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function writeAtomically(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

/** Starts the server, publishes the packages, and says how to install from it. */
function start(run: TestRegistryRun): TestRegistry {
  buildWorkspacePackagesIfStale(PUBLISHABLE_PACKAGES);
  const logFile = path.join(run.folder, "registry.log");
  const log = openSync(logFile, "a");
  // Detached: it serves every test file of the run, not only the one that started it.
  const server = spawn(process.execPath, [SERVER, run.folder, String(run.vitestPid)], {
    detached: true,
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  server.unref();
  const pid = server.pid as number;
  writeFileSync(path.join(run.folder, "server.pid"), String(pid));
  const portFile = path.join(run.folder, "port");
  const deadline = Date.now() + 60_000;
  while (!existsSync(portFile)) {
    if (!alive(pid) || Date.now() > deadline) {
      throw new Error(
        `the test registry did not start listening:\n${readFileSync(logFile, "utf8")}`,
      );
    }
    pause(50);
  }
  const url = `http://127.0.0.1:${readFileSync(portFile, "utf8")}/`;
  // pnpm publishes as a release does: it packs each package's `files` and turns `workspace:*`
  // into the version of the package depended on.
  const publish = spawnSync(
    "pnpm",
    ["--filter", "./packages/*", "-r", "publish", "--registry", url, "--no-git-checks"],
    { cwd: REPO, encoding: "utf8" },
  );
  if (publish.status !== 0) {
    throw new Error(
      `pnpm publish to the test registry failed:\n${publish.stdout}${publish.stderr}`,
    );
  }
  const npmrc = path.join(run.folder, "npmrc");
  writeFileSync(npmrc, `@sluice:registry=${url}\n`);
  return {
    url,
    env: {
      "npm_config_@sluice:registry": url,
      // pnpm reads registry routes from a user-level npmrc, not from the environment.
      pnpm_config_npmrc_auth_file: npmrc,
      // A run's own metadata cache: another run's registry on the same port served other builds.
      pnpm_config_cache_dir: path.join(run.folder, "pnpm-cache"),
      // pnpm holds back versions younger than its minimumReleaseAge, adding an exclusion to the
      // project's pnpm-workspace.yaml instead: these were published seconds ago, a release's
      // are not by the time users install them.
      pnpm_config_minimum_release_age: "0",
    },
    published: [...PUBLISHABLE_PACKAGES],
    folder: run.folder,
  };
}

/**
 * The run's test registry, started and published to by the first test file that asks (the
 * others wait for it). Synchronous, like the install helpers that call it.
 *
 * @throws an Error with the server's log or pnpm's output when starting or publishing failed
 *   (in this test file or in the one that started it).
 */
export function testRegistry(): TestRegistry {
  const run = inject(TEST_REGISTRY_RUN);
  if (run === undefined) {
    throw new Error(
      "no test registry folder: examples/src/test-support/test-registry-global-setup.ts is not a globalSetup of this vitest run",
    );
  }
  const ready = path.join(run.folder, "registry.json");
  const failed = path.join(run.folder, "failed.txt");
  if (!existsSync(ready) && !existsSync(failed)) {
    let starter = true;
    try {
      mkdirSync(path.join(run.folder, "lock"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      starter = false;
    }
    if (starter) {
      try {
        writeAtomically(ready, JSON.stringify(start(run)));
      } catch (error) {
        writeAtomically(failed, (error as Error).message);
        throw error;
      }
    } else {
      const deadline = Date.now() + START_TIMEOUT_MS;
      while (!existsSync(ready) && !existsSync(failed)) {
        if (Date.now() > deadline) {
          throw new Error(`the test registry was not ready within ${START_TIMEOUT_MS} ms`);
        }
        pause(100);
      }
    }
  }
  if (existsSync(failed)) {
    throw new Error(`the test registry could not be started:\n${readFileSync(failed, "utf8")}`);
  }
  return JSON.parse(readFileSync(ready, "utf8")) as TestRegistry;
}

/**
 * {@link testRegistry}, with this process's environment routing the `@sluice` scope to it, so
 * every npm or pnpm command the test file runs afterwards installs the packages from it.
 */
export function useTestRegistry(): TestRegistry {
  const registry = testRegistry();
  Object.assign(process.env, registry.env);
  return registry;
}

/** A Sluice package an install put into a project, as its lockfile records it. */
export interface InstalledSluicePackage {
  /** `@sluice/cluster`. */
  readonly name: string;
  readonly version: string;
  /** The `sha512-...` of the tarball that was installed. */
  readonly integrity: string;
}

/** The Sluice packages a project's lockfile (`pnpm-lock.yaml` or `package-lock.json`) lists. */
export function installedSluicePackages(project: string): InstalledSluicePackage[] {
  const pnpmLock = path.join(project, "pnpm-lock.yaml");
  if (existsSync(pnpmLock)) {
    const text = readFileSync(pnpmLock, "utf8");
    return [
      ...text.matchAll(
        /^ {2}'?(@sluice\/[a-z-]+)@([^':\s]+)'?:\n {4}resolution: \{integrity: ([^,}\s]+)/gm,
      ),
    ].map(([, name, version, integrity]) => ({
      name: name as string,
      version: version as string,
      integrity: integrity as string,
    }));
  }
  const lock = JSON.parse(readFileSync(path.join(project, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string; integrity?: string }>;
  };
  return Object.entries(lock.packages)
    .filter(([where]) => /(^|\/)node_modules\/@sluice\/[a-z-]+$/.test(where))
    .map(([where, entry]) => ({
      name: where.slice(where.lastIndexOf("@sluice/")),
      version: entry.version ?? "",
      integrity: entry.integrity ?? "",
    }));
}

/**
 * The integrity of `name@version` as the test registry serves it, read from its storage; undefined
 * when it does not have that version.
 */
export function registryIntegrity(
  registry: TestRegistry,
  name: string,
  version: string,
): string | undefined {
  const metadata = path.join(registry.folder, "storage", name, "package.json");
  if (!existsSync(metadata)) return undefined;
  const { versions } = JSON.parse(readFileSync(metadata, "utf8")) as {
    versions: Record<string, { dist: { integrity: string } }>;
  };
  return versions[version]?.dist.integrity;
}

/**
 * The Sluice packages of a project that did not come from the test registry: those whose
 * integrity differs from what the registry serves (a tarball, a link, another registry). Empty
 * when every one came from it.
 */
export function sluicePackagesNotFromRegistry(registry: TestRegistry, project: string): string[] {
  return installedSluicePackages(project)
    .filter((pkg) => registryIntegrity(registry, pkg.name, pkg.version) !== pkg.integrity)
    .map((pkg) => `${pkg.name}@${pkg.version} (${pkg.integrity})`);
}
