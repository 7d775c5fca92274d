/**
 * Case 8, run inside one child process: checkpoint duration under back-pressure. A source emits
 * 100-byte records at a fixed rate to a sink throttled to a tenth of it, through a JobDeployer
 * and a TaskExecutor with the in-process (local) plugin, while checkpoints are taken every
 * 200 ms. It runs four times: aligned checkpoints, unaligned ones, aligned ones with buffer
 * debloating, and aligned ones that turn unaligned after a 100 ms alignment timeout. It reports each completed checkpoint's duration (trigger to completion, after a
 * warm-up that lets the queues fill), the in-flight output sampled every 20 ms, and the channel
 * state each checkpoint stored.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  Configuration,
  JobDeployer,
  JobGraph,
  PollStatus,
  type Task,
  TaskExecutor,
} from "@sluice/runtime";

export interface CheckpointArgs {
  /** Length of each mode's run. */
  readonly durationMs: number;
  /** Checkpoints triggered before this much time into the run are not counted. */
  readonly warmupMs: number;
  /** Records per second the source emits. */
  readonly producerRate: number;
  /** Records per second the sink consumes (a tenth of the source's rate). */
  readonly consumerRate: number;
  readonly recordSize: number;
}

export type CheckpointMode =
  | "aligned"
  | "unaligned"
  | "aligned+debloat"
  | "aligned with 100 ms timeout";

export interface CheckpointModeResult {
  readonly mode: CheckpointMode;
  /** The mode's configuration keys. */
  readonly config: Record<string, unknown>;
  /** Duration (ms) of each counted completed checkpoint. */
  readonly checkpointMs: number[];
  /** Samples (after the warm-up) of the data bytes queued in the source's output. */
  readonly inFlightBytes: number[];
  /** Channel state bytes each counted checkpoint stored (all tasks). */
  readonly persistedBytes: number[];
  readonly emitted: number;
  readonly consumed: number;
  /** From the deployment to the job's end (the sink drains what is left after the source). */
  readonly elapsedMs: number;
  readonly checks: string[];
}

const LOADER = { applicationDirs: [fileURLToPath(new URL("../..", import.meta.url))] };

const MODES: Readonly<Record<CheckpointMode, Record<string, unknown>>> = {
  aligned: {},
  unaligned: { "execution.checkpointing.unaligned.enabled": true },
  // The target is what the throttled sink consumes in 50 ms: Flink's default of 1 s would be
  // more than the queues hold at this rate, and would change nothing.
  "aligned+debloat": {
    "taskmanager.network.memory.buffer-debloat.enabled": true,
    "taskmanager.network.memory.buffer-debloat.target": "50ms",
    "taskmanager.network.memory.buffer-debloat.period": "50ms",
    "taskmanager.network.memory.buffer-debloat.samples": 5,
  },
  // Aligned, but a barrier still waiting (in the source's back-pressured output, or in the
  // sink's alignment) 100 ms after its checkpoint started turns unaligned.
  "aligned with 100 ms timeout": {
    "execution.checkpointing.unaligned.enabled": true,
    "execution.checkpointing.aligned-checkpoint-timeout": "100ms",
  },
};

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The partition's in-flight output, where the plugin can tell (the local plugin can). */
function queuedBytes(task: Task | undefined): number {
  const partition = task?.partitions[0] as { getNumberOfQueuedBytes?: () => number } | undefined;
  return partition?.getNumberOfQueuedBytes?.() ?? Number.NaN;
}

async function runMode(mode: CheckpointMode, args: CheckpointArgs): Promise<CheckpointModeResult> {
  const dir = await mkdtemp(path.join(tmpdir(), "sluice-bench-checkpoints-"));
  const config: Record<string, unknown> = {
    "shuffle-service-factory.class": "@sluice/network#LocalShuffleServiceFactory",
    "taskmanager.host": "127.0.0.1",
    "execution.checkpointing.interval": "200ms",
    "state.checkpoints.dir": dir,
    "execution.buffer-timeout.interval": "5ms",
    ...MODES[mode],
  };
  const checks: string[] = [];
  let source: Task | undefined;
  const record = "x".repeat(args.recordSize);
  const invokables = {
    source: async (task: Task) => {
      source = task;
      const writer = task.writer<string>();
      const start = performance.now();
      let emitted = 0;
      for (;;) {
        const elapsed = performance.now() - start;
        if (elapsed >= args.durationMs) return emitted;
        const due = Math.floor((elapsed / 1000) * args.producerRate);
        // Back-pressure makes the source fall behind its rate; it stops on time regardless.
        while (emitted < due && performance.now() - start < args.durationMs) {
          if (!writer.isAvailable()) {
            // Back-pressured: checkpoint triggers still run here.
            await task.yieldToMailbox(writer.getAvailableFuture());
            continue;
          }
          writer.emit(record);
          emitted++;
        }
        await task.yieldToMailbox(sleep(1));
      }
    },
    sink: async (task: Task) => {
      const reader = task.reader<string>();
      const start = performance.now();
      let consumed = 0;
      for (;;) {
        const allowed =
          Math.floor(((performance.now() - start) / 1000) * args.consumerRate) - consumed;
        if (allowed <= 0) {
          await sleep(1);
          continue;
        }
        const status = reader.pollRecords(() => consumed++, Math.min(allowed, 64));
        if (status === PollStatus.END_OF_INPUT) return consumed;
        if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      }
    },
  };
  const configuration = new Configuration(config);
  const executor = await TaskExecutor.start(configuration, { invokables, loader: LOADER });
  const deployer = await JobDeployer.start(configuration, { loader: LOADER });
  try {
    const graph = new JobGraph(`checkpoints under back-pressure (${mode})`);
    const from = graph.addVertex({ name: "Source", parallelism: 1, invokable: "source" });
    const to = graph.addVertex({ name: "Sink", parallelism: 1, invokable: "sink" });
    graph.connect(from, to, { partitioner: { name: "FORWARD" }, serializer: "string" });
    const execution = await deployer.deploy(graph, () => executor);
    const start = Date.now();
    const checkpointMs: number[] = [];
    const persistedBytes: number[] = [];
    const inFlightBytes: number[] = [];
    const seen = new Set<bigint>();
    let running = true;
    const sampler = (async () => {
      while (running) {
        const latest = execution.checkpointCoordinator?.latestCompletedCheckpoint;
        if (latest !== undefined && !seen.has(latest.checkpointId)) {
          seen.add(latest.checkpointId);
          if (latest.timestamp >= start + args.warmupMs) {
            checkpointMs.push(latest.completedAt - latest.timestamp);
            persistedBytes.push(
              latest.subtaskStates.reduce((sum, s) => sum + (s.metrics.persistedDataBytes ?? 0), 0),
            );
          }
        }
        const elapsed = Date.now() - start;
        if (elapsed >= args.warmupMs && elapsed < args.durationMs) {
          inFlightBytes.push(queuedBytes(source));
        }
        await sleep(20);
      }
    })();
    const result = await execution.terminated;
    running = false;
    await sampler;
    if (result.status !== "FINISHED") {
      checks.push(`${mode}: the job ended ${result.status}: ${result.error?.message ?? ""}`);
    }
    const emitted = (result.results.get("Source")?.[0] as number | undefined) ?? 0;
    const consumed = (result.results.get("Sink")?.[0] as number | undefined) ?? 0;
    if (emitted !== consumed) checks.push(`${mode}: emitted ${emitted}, consumed ${consumed}`);
    if (checkpointMs.length === 0) checks.push(`${mode}: no checkpoint completed after warm-up`);
    return {
      mode,
      config: MODES[mode],
      checkpointMs,
      inFlightBytes,
      persistedBytes,
      emitted,
      consumed,
      elapsedMs: Date.now() - start,
      checks,
    };
  } finally {
    await deployer.close();
    await executor.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function runCheckpointBenchmark(
  args: CheckpointArgs,
): Promise<CheckpointModeResult[]> {
  const results: CheckpointModeResult[] = [];
  for (const mode of Object.keys(MODES) as CheckpointMode[])
    results.push(await runMode(mode, args));
  return results;
}
