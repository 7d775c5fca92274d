/**
 * Case 13, inside one child process: one task manager (a TaskExecutor of the TCP plugin with 2
 * task slots, on its event loop or with its slots on threads) and a JobDeployer that places every
 * subtask of each run's job on it. A run deploys a job of case 13's job module
 * (`slot-bench-code.ts`) and measures it at its consumers, from the first arrival to the last.
 * The child also samples its RSS, threads included.
 */
import { fileURLToPath } from "node:url";
import {
  Configuration,
  JobDeployer,
  JobGraph,
  type TaskExecutor,
  TaskExecutor as TaskExecutorClass,
} from "@sluice/runtime";
import type { ArrivalReport } from "./slot-bench-code.js";

/**
 * How the task manager runs its two slots: on its event loop, each on a thread of its own, or
 * slot 0 on the main thread and slot 1 on a thread (`taskmanager.task-slots.main-thread-slot`).
 */
export type SlotsMode = "single-loop" | "threaded" | "threaded, slot on the main thread";

/** The configuration of a task manager that runs its slots as `mode` says. */
function slotsModeConfig(mode: SlotsMode): Record<string, unknown> {
  if (mode === "single-loop") return { "taskmanager.task-slots.mode": "single-loop" };
  return {
    "taskmanager.task-slots.mode": "threaded",
    "taskmanager.task-slots.main-thread-slot": mode !== "threaded",
  };
}

export interface SlotsStartArgs {
  readonly mode: SlotsMode;
  /** Extra configuration (the bench's `-D` overrides). */
  readonly config: Record<string, unknown>;
}

export interface KeyedRunArgs {
  /** Records each of the two sources writes. */
  readonly recordsPerSource: number;
}

export interface ChannelRunArgs {
  /** Segment-sized records the source writes. */
  readonly records: number;
}

/** One run's measurement. */
export interface SlotsRunResult {
  /** Records (or buffers) per second at the consumers, first arrival to last. */
  readonly perSecond: number;
  /** Payload bytes per second (the channel run). */
  readonly bytesPerSecond: number;
  readonly records: number;
  readonly checks: string[];
}

const MB = 1024 * 1024;
const SEGMENT_SIZE = 32 * 1024;
/** bench/ (this file is dist/cases/slots-bench.js): its package.json lists the plugins. */
const LOADER = { applicationDirs: [fileURLToPath(new URL("../..", import.meta.url))] };
const CODE = fileURLToPath(new URL("./slot-bench-code.js", import.meta.url));

let executor: TaskExecutor | undefined;
let deployer: JobDeployer | undefined;
let sampler: NodeJS.Timeout | undefined;
let peakRss = 0;
let startRss = 0;
/** RSS once the task manager (its slot threads too) and the job side are up, before any job. */
let idleRss = 0;

/** Starts the task manager (and the job side) of `args.mode`. */
export async function startSlots(args: SlotsStartArgs): Promise<{ rssMB: number }> {
  const configuration = new Configuration({
    "shuffle-service-factory.class": "tcp",
    "taskmanager.host": "127.0.0.1",
    "taskmanager.data.bind-host": "127.0.0.1",
    "taskmanager.data.port": 0,
    "taskmanager.memory.network.min": "64mb",
    "taskmanager.memory.segment-size": `${SEGMENT_SIZE / 1024}kb`,
    "taskmanager.numberOfTaskSlots": 2,
    ...slotsModeConfig(args.mode),
    "execution.buffer-timeout.interval": "100ms",
    ...args.config,
  });
  globalThis.gc?.();
  startRss = process.memoryUsage.rss();
  executor = await TaskExecutorClass.start(configuration, {
    loader: LOADER,
    userCodeLoader: LOADER,
    userCodeModule: CODE,
  });
  deployer = await JobDeployer.start(configuration, { loader: LOADER });
  peakRss = process.memoryUsage.rss();
  idleRss = peakRss;
  sampler = setInterval(() => {
    const rss = process.memoryUsage.rss();
    if (rss > peakRss) peakRss = rss;
  }, 10);
  sampler.unref();
  return { rssMB: peakRss / MB };
}

/**
 * The child's RSS: when it started (before the task manager), once the task manager was up with
 * nothing run yet, its peak since (the kernel's high-water mark too, which catches peaks between
 * two samples), and now.
 */
export function slotsMemory(): { startMB: number; idleMB: number; peakMB: number; nowMB: number } {
  const maxRss = process.resourceUsage().maxRSS * 1024;
  return {
    startMB: startRss / MB,
    idleMB: idleRss / MB,
    peakMB: Math.max(peakRss, maxRss) / MB,
    nowMB: process.memoryUsage.rss() / MB,
  };
}

function started(): { executor: TaskExecutor; deployer: JobDeployer } {
  if (executor === undefined || deployer === undefined) throw new Error("startSlots first");
  return { executor, deployer };
}

/** What the consumers' reports add up to: every record once, first arrival to last. */
function measure(reports: readonly ArrivalReport[], expected: number): SlotsRunResult {
  const records = reports.reduce((total, report) => total + report.records, 0);
  const bytes = reports.reduce((total, report) => total + report.bytes, 0);
  const first = Math.min(...reports.map((report) => report.first));
  const last = Math.max(...reports.map((report) => report.last));
  const seconds = (last - first) / 1000;
  const checks = records === expected ? [] : [`${records} records arrived, ${expected} were sent`];
  return {
    perSecond: seconds > 0 ? records / seconds : 0,
    bytesPerSecond: seconds > 0 ? bytes / seconds : 0,
    records,
    checks,
  };
}

/** Sources (2) → HASH by key → counts (2), 100-byte records; records/s at the counts. */
export async function keyedRun(args: KeyedRunArgs): Promise<SlotsRunResult> {
  const { executor: tm, deployer: jobs } = started();
  const graph = new JobGraph("keyed on two slots");
  const sources = graph.addVertex({
    name: "Source",
    parallelism: 2,
    invokable: "keyed-source",
    configuration: { records: args.recordsPerSource },
  });
  const counts = graph.addVertex({ name: "Count", parallelism: 2, invokable: "keyed-count" });
  graph.connect(sources, counts, {
    partitioner: { name: "HASH", keySelector: "first-int" },
    serializer: "bytes",
  });
  const result = await (await jobs.deploy(graph, () => tm)).terminated;
  if (result.status !== "FINISHED")
    throw new Error(`the keyed job ${result.status}: ${result.error}`);
  return measure((result.results.get("Count") ?? []) as ArrivalReport[], 2 * args.recordsPerSource);
}

/**
 * A source writing segment-sized records to a sink on the other slot (a local channel between
 * threads with slot threads, between tasks of one event loop without); payload bytes/s.
 */
export async function channelRun(args: ChannelRunArgs): Promise<SlotsRunResult> {
  const { executor: tm, deployer: jobs } = started();
  const graph = new JobGraph("one channel between two slots");
  const configuration = { records: args.records, segmentSize: SEGMENT_SIZE };
  const source = graph.addVertex({
    name: "Source",
    parallelism: 1,
    invokable: "segment-source",
    configuration,
  });
  const sink = graph.addVertex({
    name: "Sink",
    parallelism: 1,
    invokable: "segment-sink",
    configuration,
  });
  graph.connect(source, sink, { partitioner: { name: "FORWARD" }, serializer: "bytes" });
  const result = await (await jobs.deploy(graph, () => tm)).terminated;
  if (result.status !== "FINISHED")
    throw new Error(`the channel job ${result.status}: ${result.error}`);
  return measure((result.results.get("Sink") ?? []) as ArrivalReport[], args.records);
}

/** Closes the job side and the task manager. */
export async function stopSlots(): Promise<void> {
  clearInterval(sampler);
  await deployer?.close();
  await executor?.close();
  deployer = undefined;
  executor = undefined;
}
