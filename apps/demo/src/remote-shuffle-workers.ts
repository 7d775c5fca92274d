import { setTimeout as delay } from "node:timers/promises";
import { ConfigurationError } from "@sluice/core";
import type { Configuration } from "@sluice/runtime";
import type { LoadedShuffleServiceFactory } from "@sluice/runtime/plugin";
import type { ShuffleMaster } from "@sluice/runtime-api";
import { type RegisteredShuffleWorker, RemoteShuffleOptions } from "@sluice/shuffle-remote";
import type { BatchShuffleReport } from "./batch-mode.js";
import { DEFAULT_SHUFFLE_WORKERS, type DemoOptions } from "./cli.js";

/** True when the loaded plugin is the remote shuffle (it owns the shuffle manager's keys). */
export function isRemoteShuffle(plugin: LoadedShuffleServiceFactory): boolean {
  return plugin.configOptions.some(
    (option) => option.key === RemoteShuffleOptions.EMBEDDED_WORKERS.key,
  );
}

/**
 * `--shuffle-workers` and the demo's defaults for the remote shuffle: the job manager's
 * ShuffleMaster starts the workers next to itself (2 unless configured), and its shuffle manager
 * takes a free port unless configured (`sluice shuffleworker --jobmanager` adds more workers).
 *
 * @throws ConfigurationError when `--shuffle-workers` is given for another plugin, or the remote
 *   shuffle for a streaming run.
 */
export function applyRemoteShuffleFlags(
  configuration: Configuration,
  plugin: LoadedShuffleServiceFactory,
  options: DemoOptions,
): void {
  if (!isRemoteShuffle(plugin)) {
    if (options.shuffleWorkers !== undefined) {
      throw new ConfigurationError(
        `--shuffle-workers starts shuffle workers of the remote shuffle (--shuffle remote), but the shuffle is ${plugin.value}`,
      );
    }
    if (options.killShuffleWorkerAfterMs !== undefined) {
      throw new ConfigurationError(
        `--kill-shuffle-worker-after kills a shuffle worker of the remote shuffle (--shuffle remote), but the shuffle is ${plugin.value}`,
      );
    }
    return;
  }
  if (options.mode === "streaming") {
    // The plugin would refuse the job's first pipelined partition; say it before anything starts.
    throw new ConfigurationError(
      `the shuffle ${plugin.value} stores BLOCKING partitions only: run it with --mode batch`,
    );
  }
  const workers = RemoteShuffleOptions.EMBEDDED_WORKERS;
  if (options.shuffleWorkers !== undefined) {
    configuration.set(workers.key, options.shuffleWorkers);
  } else if (!configuration.contains(workers)) {
    configuration.set(workers.key, DEFAULT_SHUFFLE_WORKERS);
  }
  if (!configuration.contains(RemoteShuffleOptions.MANAGER_PORT)) {
    configuration.set(RemoteShuffleOptions.MANAGER_PORT.key, 0);
  }
}

/** What the demo reads of the remote shuffle's master (duck-typed: any plugin's master). */
interface ShuffleWorkerRegistry {
  readonly managerPort: number;
  registeredWorkers(): RegisteredShuffleWorker[];
  onWorkerRegistered(listener: (worker: RegisteredShuffleWorker) => void): void;
}

function isRegistry(master: ShuffleMaster): master is ShuffleMaster & ShuffleWorkerRegistry {
  const candidate = master as Partial<ShuffleWorkerRegistry>;
  return (
    typeof candidate.registeredWorkers === "function" &&
    typeof candidate.onWorkerRegistered === "function"
  );
}

/** `shuffle worker 0 (pid 123) ready: rpc …, data …, incarnation …`, as task managers are shown. */
export function describeShuffleWorker(index: number, worker: RegisteredShuffleWorker): string {
  const { host, rpcPort, dataPort, incarnation } = worker.address;
  return `shuffle worker ${index} (pid ${worker.pid}) ready: rpc ${host}:${rpcPort}, data ${host}:${dataPort}, incarnation ${incarnation}\n`;
}

/**
 * Prints where the remote shuffle's shuffle manager listens, and every shuffle worker, those
 * registered already and those that register later (the shuffleworker role, a restarted worker).
 * Returns the workers seen, in order; nothing for another plugin's master.
 */
export function announceShuffleWorkers(
  master: ShuffleMaster,
  host: string,
  say: (line: string) => void,
): RegisteredShuffleWorker[] {
  const seen: RegisteredShuffleWorker[] = [];
  if (!isRegistry(master)) return seen;
  say(
    `shuffle manager: ${host}:${master.managerPort} (more workers: pnpm sluice shuffleworker --jobmanager ${host}:${master.managerPort})\n`,
  );
  const announce = (worker: RegisteredShuffleWorker) => {
    say(describeShuffleWorker(seen.length, worker));
    seen.push(worker);
  };
  for (const worker of master.registeredWorkers()) announce(worker);
  master.onWorkerRegistered(announce);
  return seen;
}

/** How long the demo waits for the shuffle workers to report their released files deleted. */
const DELETION_WAIT_MS = 10_000;

/**
 * What every shuffle worker stored, as batch-shuffle reports, once each reported, in a heartbeat
 * received since this call, no file left (workers delete released partitions asynchronously and
 * report with their heartbeats; bounded by {@link DELETION_WAIT_MS}). `undefined` for another
 * plugin's master.
 */
export async function shuffleWorkerReports(
  master: ShuffleMaster,
): Promise<BatchShuffleReport[] | undefined> {
  if (!isRegistry(master)) return undefined;
  const deadline = Date.now() + DELETION_WAIT_MS;
  // A heartbeat from before the job's end may not count its files yet (a short job writes them
  // between two heartbeats): only a report received since then is taken.
  const before = new Map(
    master.registeredWorkers().map((w) => [w.address.incarnation, w.storage] as const),
  );
  for (;;) {
    // A worker lost during the job (killed) reports no more; its files went with it.
    const workers = master.registeredWorkers().filter((worker) => worker.live);
    const done = workers.every(
      (w) =>
        w.storage !== undefined &&
        w.storage !== before.get(w.address.incarnation) &&
        w.storage.filesOnDisk === 0,
    );
    if (done || Date.now() >= deadline) {
      return workers.map((worker) => ({
        networkMemoryBytes: 0,
        ...emptyStorage,
        ...worker.storage,
      }));
    }
    await delay(50);
  }
}

const emptyStorage = {
  fileBytesWritten: 0,
  bytesBeforeCompression: 0,
  bytesAfterCompression: 0,
  filesCreated: 0,
  filesDeleted: 0,
  filesOnDisk: 0,
};
