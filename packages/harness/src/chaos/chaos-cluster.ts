/**
 * The session cluster of the chaos tests, started only with `sluice` commands: a job manager in
 * the hub namespace, two task managers (`--usrlib apps/demo/dist`, where the word count's job
 * module is) in the first two worker namespaces (the third is the spare host where replacements
 * start), checkpoints into a temporary folder; the demo submits the word count to it as a thin
 * client (`--jobmanager`) from the hub and prints the verified summary every scenario checks.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { SLUICE_MAIN } from "@sluice/cluster";
import { waitFor } from "@sluice/core/testing";
import { expect } from "vitest";
import type { NamespaceHost, NetworkNamespaces } from "../testing/network-namespaces.js";
import {
  killTrackedProcesses,
  lastJsonLine,
  type ProcessRun,
  startProcess,
  type TrackedProcess,
} from "../testing/tracked-process.js";
import { REPO } from "../testing/workspace-build.js";

/** The job manager's control port in the hub namespace. */
const JOB_MANAGER_PORT = 6123;
/** The job manager's REST port in the hub namespace, which the demo submits to. */
const REST_PORT = 8081;
/** How often the chaos jobs checkpoint: often enough to see progress within a fault. */
export const CHECKPOINT_INTERVAL_MS = 500;
/** The demo's compiled entry point (the thin client that submits and verifies the word count). */
const DEMO_MAIN = path.join(REPO, "apps/demo/dist/main.js");
/** Where the word count's job module is, for the task managers' `--usrlib`. */
const DEMO_USRLIB = path.join(REPO, "apps/demo/dist");

/** Polls `condition` every 50 ms until it holds (core's `waitFor`); fails after `timeoutMs`. */
export function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  return waitFor(condition, { what, timeoutMs, intervalMs: 50 });
}

/** A running chaos cluster. */
export interface ChaosCluster {
  /** The `sluice jobmanager` process. */
  readonly jm: TrackedProcess;
  /** The demo submitting the word count and following it (`--jobmanager`, `--json`). */
  readonly client: TrackedProcess;
  /** The `sluice taskmanager` processes, in start order (replacements appended). */
  readonly tms: TrackedProcess[];
  /** `state.checkpoints.dir` of the job. */
  readonly checkpointDir: string;
  /** When the job manager was started (`Date.now()`). */
  readonly startedAt: number;
  /** The host a task manager of {@link ChaosCluster.tms} runs on. */
  hostOf(tm: TrackedProcess): NamespaceHost;
  /** Starts another task manager in `host`'s namespace (a replacement). */
  startTaskManager(host: NamespaceHost): TrackedProcess;
}

/** What a chaos cluster runs: the job's arguments and the cluster's configuration. */
export interface ChaosClusterOptions {
  /** Arguments of the word count job for the demo (`--duration 15`, `--throttle 20k`). */
  readonly job?: readonly string[];
  /**
   * `-D key=value` arguments of every `sluice` process of the cluster (heartbeats, shuffle plugin),
   * after the checkpoint keys.
   */
  readonly cluster?: readonly string[];
}

/** What a scenario measured, printed as one JSON line and put in docs/chaos.md. */
export interface ChaosResult {
  readonly scenario: string;
  readonly verified: boolean;
  readonly records: number;
  readonly durationMs: number;
  readonly recordsPerSecond: number;
  /** Bytes out of the source partitions (the data the shuffle moved). */
  readonly bytes?: number;
  /** Records per second as a ratio to the clean link (same job, same link, no fault). */
  readonly throughputRatio?: number;
  /** From the end of the fault (or the loss) to the next completed checkpoint. */
  readonly recoverMs?: number;
  readonly restarts: number;
  readonly checkpointsCompleted: number;
  readonly [more: string]: unknown;
}

/**
 * Starts a `sluice jobmanager` in the hub and a `sluice taskmanager` in each of the first two
 * workers, configured to checkpoint every {@link CHECKPOINT_INTERVAL_MS} ms, and, once the job
 * manager's REST endpoint reports both task managers registered, the demo in the hub, which
 * submits a word count of `records` words.
 */
export async function startChaosCluster(
  network: NetworkNamespaces,
  records: number,
  options: ChaosClusterOptions = {},
): Promise<ChaosCluster> {
  const { hub } = network;
  const checkpointDir = mkdtempSync(path.join(tmpdir(), "sluice-chaos-checkpoints-"));
  const startedAt = Date.now();
  const configuration = [
    "-D",
    `jobmanager.rpc.address=${hub.address}`,
    "-D",
    `jobmanager.rpc.port=${JOB_MANAGER_PORT}`,
    "-D",
    `rest.address=${hub.address}`,
    "-D",
    `rest.bind-address=${hub.address}`,
    "-D",
    `rest.port=${REST_PORT}`,
    "-D",
    `execution.checkpointing.interval=${CHECKPOINT_INTERVAL_MS}ms`,
    "-D",
    `state.checkpoints.dir=${checkpointDir}`,
    ...(options.cluster ?? []),
  ];
  const sluice = (host: NamespaceHost, args: readonly string[]) =>
    startProcess([process.execPath, SLUICE_MAIN, ...args], {
      cwd: REPO,
      prefix: network.prefix(host),
    });
  const jm = sluice(hub, ["jobmanager", ...configuration]);
  const tms: TrackedProcess[] = [];
  const hosts = new Map<TrackedProcess, NamespaceHost>();
  const startTaskManager = (host: NamespaceHost) => {
    const tm = sluice(host, ["taskmanager", "--usrlib", DEMO_USRLIB, ...configuration]);
    tms.push(tm);
    hosts.set(tm, host);
    return tm;
  };
  for (const worker of network.workers.slice(0, 2)) startTaskManager(worker);
  // A session cluster refuses a job while no task manager is registered: submit once both are.
  const overview = `http://${hub.address}:${REST_PORT}/overview`;
  await until(
    () =>
      (network.listening(hub, REST_PORT) &&
        (network.getJson(hub, overview) as { taskmanagers?: number } | undefined)?.taskmanagers ===
          tms.length) ||
      jm.output().code !== null,
    30_000,
    "both task managers to register (the REST endpoint's /overview)",
  );
  if (jm.output().code !== null) {
    throw new Error(`the job manager exited (code ${jm.output().code}):\n${jm.output().stderr}`);
  }
  const client = startProcess(
    [
      process.execPath,
      DEMO_MAIN,
      "--jobmanager",
      `${hub.address}:${REST_PORT}`,
      "--records",
      String(records),
      "--json",
      ...(options.job ?? []),
    ],
    { cwd: REPO, prefix: network.prefix(hub) },
  );
  const hostOf = (tm: TrackedProcess) => hosts.get(tm) as NamespaceHost;
  return { jm, client, tms, checkpointDir, startedAt, hostOf, startTaskManager };
}

/**
 * The id of the latest completed checkpoint in `checkpointDir` (its `_metadata` is written
 * once every task acknowledged), or 0 before the first. Older ones may have been deleted
 * (`state.checkpoints.num-retained`), so only the highest id counts.
 */
export function latestCheckpoint(checkpointDir: string): number {
  let latest = 0;
  let jobs: string[];
  try {
    jobs = readdirSync(checkpointDir);
  } catch {
    return 0;
  }
  for (const job of jobs) {
    let entries: string[];
    try {
      entries = readdirSync(path.join(checkpointDir, job));
    } catch {
      continue;
    }
    for (const entry of entries) {
      const id = Number(/^chk-(\d+)$/.exec(entry)?.[1]);
      if (!Number.isInteger(id) || id <= latest) continue;
      try {
        if (statSync(path.join(checkpointDir, job, entry, "_metadata")).isFile()) latest = id;
      } catch {
        // Not completed yet, or deleted meanwhile.
      }
    }
  }
  return latest;
}

/** Waits until the job completed a checkpoint after `after` (so it runs and makes progress). */
export async function checkpointAfter(
  cluster: ChaosCluster,
  after: number,
  timeoutMs: number,
  what: string,
): Promise<number> {
  let latest = 0;
  await until(
    () => {
      latest = latestCheckpoint(cluster.checkpointDir);
      return (
        latest > after || cluster.client.output().code !== null || cluster.jm.output().code !== null
      );
    },
    timeoutMs,
    what,
  );
  if (latest <= after) {
    const client = cluster.client.output();
    const jm = cluster.jm.output();
    throw new Error(
      `the demo (code ${client.code}) or the job manager (code ${jm.code}) exited before ${what}:\n${client.stderr}\n${jm.stderr}`,
    );
  }
  return latest;
}

/**
 * Waits for the job's end (the demo's, which follows it), at most `timeoutMs` (a hang fails the
 * test and kills the processes instead of leaving them running).
 */
export async function jobEnd(cluster: ChaosCluster, timeoutMs: number): Promise<ProcessRun> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const { stderr } = cluster.client.output();
      killTrackedProcesses();
      reject(new Error(`the job did not end within ${timeoutMs} ms (a hang):\n${stderr}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([cluster.client.done, hang]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The checks of a scenario the job must survive: the demo exits 0, its summary says verified for
 * exactly `records` words, "verified" is printed exactly once, checkpoints completed; then the
 * session cluster stops on SIGTERM, every process of it gracefully. Returns the JSON summary.
 */
export async function expectVerified(
  cluster: ChaosCluster,
  run: ProcessRun,
  records: number,
): Promise<Record<string, unknown>> {
  expect(run.code, run.stderr).toBe(0);
  const summary = lastJsonLine(run.stdout);
  expect(summary).toMatchObject({ verified: true, records, buffersReturned: true });
  expect(run.stderr.match(/^verified: /gm) ?? [], run.stderr).toHaveLength(1);
  const checkpoints = summary.checkpoints as { completed: number };
  expect(checkpoints.completed).toBeGreaterThan(0);
  await allEnded(cluster);
  return summary;
}

/**
 * Stops the session cluster (SIGTERM to its job manager and live task managers, as an operator
 * stops a session cluster) and waits (bounded) until every process of it exited: the live ones
 * gracefully (the SIGTERM exit code, 143), nothing left running.
 */
export async function allEnded(cluster: ChaosCluster): Promise<void> {
  const ended = (p: TrackedProcess) => p.output().code !== null || p.output().signal !== null;
  const stopped = [cluster.jm, ...cluster.tms].filter((p) => !ended(p));
  for (const p of stopped) p.child.kill("SIGTERM");
  await until(
    () => [cluster.jm, ...cluster.tms].every(ended),
    60_000,
    "every process of the session cluster to exit after SIGTERM",
  );
  for (const p of stopped) expect(p.output().code, p.output().stderr).toBe(143);
}

/** The result line of a scenario that ended verified. */
export function resultOf(
  scenario: string,
  summary: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): ChaosResult {
  return {
    scenario,
    verified: summary.verified as boolean,
    records: summary.records as number,
    durationMs: summary.durationMs as number,
    recordsPerSecond: summary.recordsPerSecond as number,
    bytes: summary.bytes as number,
    restarts: summary.restarts as number,
    checkpointsCompleted: (summary.checkpoints as { completed: number }).completed,
    ...extra,
  };
}

/** Prints a scenario's result as one JSON line (`{"chaos":...}`), for the report to quote. */
export function printResult(result: ChaosResult): void {
  console.log(JSON.stringify({ chaos: result.scenario, ...result, scenario: undefined }));
}

/** Removes a cluster's checkpoint folder. */
export function removeCheckpoints(cluster: ChaosCluster | undefined): void {
  if (cluster !== undefined) rmSync(cluster.checkpointDir, { recursive: true, force: true });
}

/** Ratio of `recordsPerSecond` to the clean link's, two decimals. */
export function ratio(recordsPerSecond: number, clean: number): number {
  return Math.round((recordsPerSecond / clean) * 100) / 100;
}

/** Waits `ms` milliseconds: how long a fault lasts (the faults are timed, not polled). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Cuts `host`'s link for `ms`, then reconnects it; resolves with when it was reconnected. */
export async function cutFor(
  network: NetworkNamespaces,
  host: NamespaceHost,
  ms: number,
): Promise<number> {
  network.cut(host);
  try {
    await sleep(ms);
  } finally {
    network.reconnect(host);
  }
  return Date.now();
}

/** Pauses `tm` (SIGSTOP) for `ms`, then resumes it (SIGCONT); resolves with when it resumed. */
export async function pauseFor(tm: TrackedProcess, ms: number): Promise<number> {
  tm.child.kill("SIGSTOP");
  try {
    await sleep(ms);
  } finally {
    tm.child.kill("SIGCONT");
  }
  return Date.now();
}
