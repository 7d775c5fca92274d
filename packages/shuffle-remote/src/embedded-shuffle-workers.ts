import { type ChildProcess, fork } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigurationError, deferred } from "@sluice/core";
import {
  BatchShuffleOptions,
  type ConfigOption,
  NettyShuffleEnvironmentOptions,
  NetworkMemoryOptions,
  type ReadableConfig,
  SecurityOptions,
  TaskManagerOptions,
} from "@sluice/runtime-api";
import { RemoteShuffleOptions } from "./remote-shuffle-options.js";

/** The environment variable a worker process reads its configuration from (JSON). */
export const WORKER_CONFIG_ENV = "SLUICE_SHUFFLE_WORKER_CONFIG";

/** The worker entry, compiled: next to this module in `dist/`, or in `dist/` beside `src/`. */
export function shuffleWorkerScript(): string {
  const here = fileURLToPath(import.meta.url);
  const script = here.endsWith(".ts")
    ? fileURLToPath(new URL("../dist/shuffle-worker-main.js", import.meta.url))
    : path.join(path.dirname(here), "shuffle-worker-main.js");
  if (!existsSync(script)) {
    throw new ConfigurationError(
      `'remote-shuffle.manager.embedded-workers' needs the shuffle worker script ${script}, which does not exist: build @sluice/shuffle-remote (pnpm build)`,
    );
  }
  return script;
}

/** The options a worker started by the master inherits from the master's configuration. */
const INHERITED: readonly ConfigOption<unknown>[] = [
  ...Object.values(RemoteShuffleOptions),
  ...Object.values(SecurityOptions),
  ...Object.values(BatchShuffleOptions),
  ...Object.values(NettyShuffleEnvironmentOptions),
  NetworkMemoryOptions.MEMORY_SEGMENT_SIZE,
  TaskManagerOptions.HOST,
] as ConfigOption<unknown>[];

/** One shuffle worker process the master started. */
export interface EmbeddedWorker {
  readonly child: ChildProcess;
  readonly tmpDir: string;
  readonly exited: Promise<void>;
}

/**
 * Starts `count` shuffle worker processes that register with the manager at `managerPort`, each
 * with a fresh folder of its own as `io.tmp.dirs` (deleted when it stops). They are children of
 * this process: they stop when it disconnects.
 */
export function startEmbeddedWorkers(
  configuration: ReadableConfig,
  managerPort: number,
  count: number,
): EmbeddedWorker[] {
  const settings: Record<string, unknown> = {};
  for (const option of INHERITED) {
    if (configuration.contains(option)) settings[option.key] = configuration.get(option);
  }
  settings[RemoteShuffleOptions.MANAGER_PORT.key] = managerPort;
  settings[RemoteShuffleOptions.EMBEDDED_WORKERS.key] = 0;
  // Several workers on one host: each takes free ports.
  settings[RemoteShuffleOptions.WORKER_RPC_PORT.key] = 0;
  settings[RemoteShuffleOptions.WORKER_DATA_PORT.key] = 0;
  const script = shuffleWorkerScript();
  return Array.from({ length: count }, () => {
    const tmpDir = mkdtempSync(path.join(tmpdir(), "sluice-shuffle-worker-"));
    const child = fork(script, [], {
      env: {
        ...process.env,
        [WORKER_CONFIG_ENV]: JSON.stringify({
          ...settings,
          [TaskManagerOptions.TMP_DIRS.key]: tmpDir,
        }),
      },
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      // Not the parent's flags (a test runner's loaders and conditions): the worker runs JavaScript.
      execArgv: [],
    });
    const exited = deferred<void>();
    child.once("exit", () => {
      rmSync(tmpDir, { recursive: true, force: true });
      exited.resolve();
    });
    return { child, tmpDir, exited: exited.promise };
  });
}
