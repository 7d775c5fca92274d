/**
 * The standalone cluster of the chaos tests: a job manager in the hub namespace, two task
 * managers in the first two worker namespaces (the third is the spare host where replacements
 * start), checkpoints into a temporary folder, and the checks every scenario ends with.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "vitest";
import {
  type DemoProcess,
  killDemoProcesses,
  lastJsonLine,
  type Run,
  startDemo,
  until,
} from "../test-support/demo-process.js";
import type { NamespaceHost, NetworkNamespaces } from "../test-support/network-namespaces.js";

/** The job manager's control port in the hub namespace. */
const JOB_MANAGER_PORT = 6123;
/** How often the chaos jobs checkpoint: often enough to see progress within a fault. */
export const CHECKPOINT_INTERVAL_MS = 500;

/** A running chaos cluster. */
export interface ChaosCluster {
  readonly jm: DemoProcess;
  /** The task managers, in start order (replacements appended). */
  readonly tms: DemoProcess[];
  /** `state.checkpoints.dir` of the job. */
  readonly checkpointDir: string;
  /** When the job manager was started (`Date.now()`). */
  readonly startedAt: number;
  /** The host a task manager of {@link ChaosCluster.tms} runs on. */
  hostOf(tm: DemoProcess): NamespaceHost;
  /** Starts another task manager in `host`'s namespace (a replacement). */
  startTaskManager(host: NamespaceHost, args?: readonly string[]): DemoProcess;
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
 * Starts a job manager in the hub and a task manager in each of the first two workers, for a
 * word count of `records` words that checkpoints every {@link CHECKPOINT_INTERVAL_MS} ms.
 * `jobArgs` go to the job manager (which hands the configuration to the task managers).
 */
export function startChaosCluster(
  network: NetworkNamespaces,
  records: number,
  jobArgs: readonly string[] = [],
): ChaosCluster {
  const { hub } = network;
  const checkpointDir = mkdtempSync(path.join(tmpdir(), "sluice-chaos-checkpoints-"));
  const startedAt = Date.now();
  const jm = startDemo(
    [
      "jobmanager",
      "--bind",
      `${hub.address}:${JOB_MANAGER_PORT}`,
      "--task-managers",
      "2",
      "--records",
      String(records),
      "--json",
      "--checkpoint-interval",
      String(CHECKPOINT_INTERVAL_MS),
      "-D",
      `state.checkpoints.dir=${checkpointDir}`,
      ...jobArgs,
    ],
    { prefix: network.prefix(hub) },
  );
  const tms: DemoProcess[] = [];
  const hosts = new Map<DemoProcess, NamespaceHost>();
  const startTaskManager = (host: NamespaceHost, args: readonly string[] = []) => {
    const tm = startDemo(
      ["taskmanager", "--jobmanager", `${hub.address}:${JOB_MANAGER_PORT}`, ...args],
      { prefix: network.prefix(host) },
    );
    tms.push(tm);
    hosts.set(tm, host);
    return tm;
  };
  for (const worker of network.workers.slice(0, 2)) startTaskManager(worker);
  const hostOf = (tm: DemoProcess) => hosts.get(tm) as NamespaceHost;
  return { jm, tms, checkpointDir, startedAt, hostOf, startTaskManager };
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
      return latest > after || cluster.jm.output().code !== null;
    },
    timeoutMs,
    what,
  );
  if (latest <= after) {
    const { code, stderr } = cluster.jm.output();
    throw new Error(`the job manager exited (code ${code}) before ${what}:\n${stderr}`);
  }
  return latest;
}

/**
 * Waits for the job manager's end, at most `timeoutMs` (a hang fails the test and kills the
 * processes instead of leaving them running).
 */
export async function jobEnd(cluster: ChaosCluster, timeoutMs: number): Promise<Run> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const { stderr } = cluster.jm.output();
      killDemoProcesses();
      reject(new Error(`the job did not end within ${timeoutMs} ms (a hang):\n${stderr}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([cluster.jm.done, hang]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The checks of a scenario the job must survive: the job manager exits 0, its summary says
 * verified for exactly `records` words, "verified" is printed exactly once, checkpoints
 * completed, and every task manager process has ended. Returns the JSON summary.
 */
export async function expectVerified(
  cluster: ChaosCluster,
  run: Run,
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

/** Waits (bounded) until every task manager of `cluster` has exited: nothing is left running. */
export async function allEnded(cluster: ChaosCluster): Promise<void> {
  await until(
    () => cluster.tms.every((tm) => tm.output().code !== null || tm.output().signal !== null),
    60_000,
    "every task manager to exit after the job",
  );
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
export async function pauseFor(tm: DemoProcess, ms: number): Promise<number> {
  tm.child.kill("SIGSTOP");
  try {
    await sleep(ms);
  } finally {
    tm.child.kill("SIGCONT");
  }
  return Date.now();
}
