import { type ChildProcess, fork } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ConfigurationError, ResourceID } from "@sluice/core";
import { Configuration, type LoadedShuffleServiceFactory } from "@sluice/runtime";
import {
  createInputGateDeploymentDescriptor,
  createResultPartitionDeploymentDescriptor,
  type ExecutionState,
  InputGateDeploymentDescriptorCodec,
  type PartitionDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
  ResultPartitionType,
  type ShuffleDescriptor,
  type ShuffleMaster,
} from "@sluice/runtime-api";
import type { DemoOptions } from "./cli.js";
import { referenceCounts } from "./corpus.js";
import { formatInteger } from "./format.js";
import {
  type ClosedMessage,
  type CoordinatorMessage,
  type CountsMessage,
  describeError,
  type ReadyMessage,
  type TaskDeployment,
  type TaskManagerMessage,
  type TaskProgress,
} from "./ipc-messages.js";
import { buildJobGraph, type JobGraph, partitionIdOf, tasksOn } from "./job-graph.js";
import { createProgressView, type ProgressSnapshot, type ProgressView } from "./progress.js";
import { describeShuffle, loadShufflePlugin } from "./shuffle-plugin.js";
import { formatSummary, type JobReport, type ProcessReport, summaryJson } from "./summary.js";
import { verifyCounts } from "./verification.js";

/** How long task managers may take to load the plugin and start their environment. */
const STARTUP_TIMEOUT_MS = 30_000;
/** How long a clean shutdown may take before the task managers are killed. */
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** After a failure: how long cancelled task managers get before SIGKILL. */
const CANCEL_GRACE_MS = 3_000;
const PROGRESS_RENDER_MS = 500;

/** The streams the demo writes to. */
export interface DemoIO {
  /** Machine-readable output (`--json`). */
  readonly stdout: NodeJS.WriteStream;
  /** Human-readable output: stdout, or stderr with `--json`. */
  readonly human: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
}

/**
 * Why the job failed. `rank` orders the report: the root cause (a worker killed by a signal,
 * a worker's own fatal error) comes before its consequences (tasks failing because a peer
 * vanished).
 */
interface Failure {
  readonly rank: number;
  readonly message: string;
  readonly exitCode: number;
}

class JobFailedError extends Error {
  constructor() {
    super("job failed");
  }
}

class Deferred<T> {
  readonly promise: Promise<T>;
  resolve!: (value: T) => void;
  reject!: (error: unknown) => void;
  constructor() {
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/** The coordinator's handle on one task-manager process. */
class TaskManagerHandle {
  ready: ReadyMessage | undefined;
  deployed = false;
  closed: ClosedMessage | undefined;
  /** Set once we asked it to stop (shutdown message or kill); its exit is then expected. */
  stopRequested = false;
  /** Set when the shutdown cancelled running tasks: exit code 1 is then expected too. */
  cancelRequested = false;
  killSignal: NodeJS.Signals | undefined;
  exited = false;
  lastRssMb = 0;
  readonly exit = new Deferred<void>();

  constructor(
    readonly index: number,
    readonly child: ChildProcess,
  ) {}

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get label(): string {
    return `task manager ${this.index} (pid ${this.pid})`;
  }

  send(message: CoordinatorMessage): void {
    if (this.exited || !this.child.connected) return;
    // A send to a worker that just died fails; its exit event reports that.
    this.child.send(message, (error) => void error);
  }
}

/**
 * The JobMaster of the demo: loads the shuffle plugin and creates the ShuffleMaster, forks the
 * task managers, registers every partition with the master and deploys the tasks with the
 * resulting descriptors (as JSON), follows progress, collects the counts, verifies them and
 * shuts everything down, on every path.
 */
export class Coordinator {
  private readonly taskManagers: TaskManagerHandle[] = [];
  private readonly failures: Failure[] = [];
  private readonly failed = new Deferred<never>();
  private readonly allReady = new Deferred<void>();
  private readonly allDeployed = new Deferred<void>();
  private readonly allDone = new Deferred<void>();
  private readonly progress = new Map<string, TaskProgress & { taskManager: number }>();
  private readonly counts: (CountsMessage | undefined)[] = [];
  private readonly sourceStates = new Map<string, { subtask: number; state: ExecutionState }>();
  private sourcesFinished = 0;
  private countsReceived = 0;
  private startedAt = 0;
  private graph: JobGraph | undefined;
  private master: ShuffleMaster | undefined;
  private view: ProgressView | undefined;
  private renderTimer: NodeJS.Timeout | undefined;
  private interruptedBy: NodeJS.Signals | undefined;
  private readonly onSignal = (signal: NodeJS.Signals) => this.interrupted(signal);
  private readonly onExit = () => this.killAll("SIGKILL");

  constructor(
    private readonly options: DemoOptions,
    private readonly io: DemoIO,
  ) {
    // Attach a handler so a rejection before anyone awaits `failed` is never "unhandled".
    this.failed.promise.catch(() => {});
  }

  /** Runs the demo; resolves with the process exit code. */
  async run(): Promise<number> {
    const { options } = this;
    let configuration: Configuration;
    try {
      configuration = Configuration.load({
        ...(options.configFile === undefined ? {} : { configFile: options.configFile }),
        args: options.dynamicProperties,
      });
      if (options.shuffle !== undefined)
        configuration.set("shuffle-service-factory.class", options.shuffle);
    } catch (error) {
      if (!(error instanceof ConfigurationError)) throw error;
      this.io.stderr.write(`error: ${error.message}\n`);
      return 2;
    }

    let plugin: LoadedShuffleServiceFactory;
    try {
      plugin = await loadShufflePlugin(configuration);
    } catch (error) {
      // The loader's message names the key, the value, where it looked and what it found.
      const code = (error as { code?: string }).code;
      this.io.stderr.write(
        `error: ${code === undefined ? "" : `[${code}] `}${(error as Error).message}\n`,
      );
      return 1;
    }

    const shuffle = describeShuffle(configuration);
    const graph = buildJobGraph(options);
    this.graph = graph;
    this.say(
      `Sluice demo: word count of ${formatInteger(options.records)} words, parallelism ${options.parallelism}, ` +
        `${options.taskManagers} task managers, shuffle ${shuffle}\n`,
    );

    process.on("SIGINT", this.onSignal);
    process.on("SIGTERM", this.onSignal);
    process.on("exit", this.onExit);
    try {
      await this.execute(configuration, plugin);
      const report = await this.finish(shuffle, plugin);
      this.io.human.write(formatSummary(report));
      if (options.json) this.io.stdout.write(`${JSON.stringify(summaryJson(report))}\n`);
      return report.verified ? 0 : 1;
    } catch (error) {
      if (!(error instanceof JobFailedError))
        this.recordFailure(0, `coordinator error: ${(error as Error).stack ?? error}`);
      return await this.reportFailure(shuffle);
    } finally {
      this.stopProgress();
      await this.master?.close().catch(() => {});
      process.off("SIGINT", this.onSignal);
      process.off("SIGTERM", this.onSignal);
      process.off("exit", this.onExit);
    }
  }

  // ------------------------------------------------------------------------------ the job

  private async execute(
    configuration: Configuration,
    plugin: LoadedShuffleServiceFactory,
  ): Promise<void> {
    const graph = this.graph as JobGraph;
    const master = plugin.factory.createShuffleMaster({
      configuration,
      onFatalError: (error) => this.recordFailure(1, `the shuffle master failed: ${error.message}`),
    });
    this.master = master;
    await master.start();
    master.registerJob({
      jobId: graph.jobId,
      stopTrackingAndReleasePartitions: async (ids) => {
        this.recordFailure(1, `the shuffle master lost partitions ${ids.join(", ")}`);
      },
    });

    // 1. Start the workers; each loads the plugin and starts its ShuffleEnvironment.
    for (let i = 0; i < this.options.taskManagers; i++) this.forkTaskManager(i, configuration);
    await this.phase(this.allReady.promise, STARTUP_TIMEOUT_MS, "the task managers to start");

    // 2. Register one partition per source with the ShuffleMaster, on the worker it runs on.
    const descriptors: ShuffleDescriptor[] = [];
    const deployments = new Map<string, TaskDeployment>();
    for (const source of graph.sources) {
      const tm = this.taskManagers[source.taskManager]?.ready as ReadyMessage;
      const partitionDescriptor: PartitionDescriptor = {
        resultId: graph.resultId,
        totalNumberOfPartitions: graph.parallelism,
        partitionId: partitionIdOf(graph, source.subtaskIndex),
        partitionType: ResultPartitionType.PIPELINED_BOUNDED,
        numberOfSubpartitions: graph.parallelism,
        connectionIndex: 0,
        isBroadcast: false,
        isAllToAllDistribution: true,
      };
      const shuffleDescriptor = await master.registerPartitionWithProducer(
        graph.jobId,
        partitionDescriptor,
        {
          producerLocation: ResourceID.fromHex(tm.resourceId),
          producerExecutionId: source.attemptId,
          address: tm.host,
          dataPort: tm.dataPort,
        },
      );
      descriptors.push(shuffleDescriptor);
      this.sourceStates.set(shuffleDescriptor.resultPartitionId.toString(), {
        subtask: source.subtaskIndex,
        state: "DEPLOYING",
      });
      const deployment = createResultPartitionDeploymentDescriptor(
        partitionDescriptor,
        shuffleDescriptor,
        graph.maxParallelism,
      );
      deployments.set(source.name, {
        kind: "source",
        name: source.name,
        subtaskIndex: source.subtaskIndex,
        attemptId: source.attemptId.toString(),
        partition: ResultPartitionDeploymentDescriptorCodec.toJSON(deployment),
        corpus: graph.corpus,
      });
    }
    // 3. Every counter reads subpartition j of every source partition (all-to-all).
    for (const counter of graph.counters) {
      const j = counter.subtaskIndex;
      const gate = createInputGateDeploymentDescriptor(
        graph.resultId,
        ResultPartitionType.PIPELINED_BOUNDED,
        { start: j, end: j },
        descriptors,
      );
      deployments.set(counter.name, {
        kind: "count",
        name: counter.name,
        subtaskIndex: j,
        attemptId: counter.attemptId.toString(),
        gate: InputGateDeploymentDescriptorCodec.toJSON(gate),
      });
    }
    for (const tm of this.taskManagers) {
      tm.send({
        type: "deploy",
        jobId: graph.jobId.toString(),
        tasks: tasksOn(graph, tm.index).map((task) => deployments.get(task.name) as TaskDeployment),
      });
    }
    await this.phase(this.allDeployed.promise, STARTUP_TIMEOUT_MS, "the tasks to be deployed");

    // 4. Every writer and gate exists: run.
    for (const state of this.sourceStates.values()) state.state = "RUNNING";
    this.startedAt = performance.now();
    for (const tm of this.taskManagers) tm.send({ type: "start" });
    this.startProgress();
    await this.phase(this.allDone.promise);
  }

  /** The job's tasks all ended: shut the workers down cleanly, verify, build the report. */
  private async finish(shuffle: string, plugin: LoadedShuffleServiceFactory): Promise<JobReport> {
    const durationMs = performance.now() - this.startedAt;
    this.view?.update(this.snapshot(), true);
    this.stopProgress();
    const graph = this.graph as JobGraph;
    this.master?.unregisterJob(graph.jobId);
    for (const tm of this.taskManagers) {
      tm.stopRequested = true;
      tm.send({ type: "shutdown", cancel: false });
    }
    const exits = Promise.all(this.taskManagers.map((tm) => tm.exit.promise));
    await this.phase(exits, SHUTDOWN_TIMEOUT_MS, "the task managers to shut down");

    const reference = referenceCounts(graph.corpus);
    const countsBySubtask = graph.counters.map(
      (c) => new Map((this.counts[c.subtaskIndex] as CountsMessage).counts),
    );
    const verification = verifyCounts(reference, countsBySubtask, graph.maxParallelism);
    const tasks = [...this.progress.values()];
    const records = tasks.filter((t) => t.kind === "count").reduce((sum, t) => sum + t.records, 0);
    const emitted = tasks.filter((t) => t.kind === "source").reduce((sum, t) => sum + t.records, 0);
    const differences = [...verification.differences];
    if (emitted !== graph.corpus.records || records !== graph.corpus.records) {
      differences.unshift(
        `the sources emitted ${formatInteger(emitted)} and the counters received ${formatInteger(records)} words; the corpus has ${formatInteger(graph.corpus.records)}`,
      );
    }
    const processes: ProcessReport[] = [
      { role: "coordinator", pid: process.pid, peakRssMb: process.resourceUsage().maxRSS / 1024 },
      ...this.taskManagers.map((tm) => {
        const closed = tm.closed;
        if (closed === undefined)
          differences.push(`${tm.label} exited without reporting its shutdown`);
        return {
          role: "taskmanager" as const,
          index: tm.index,
          pid: tm.pid,
          peakRssMb: closed?.peakRssMb ?? tm.lastRssMb,
          ...(closed?.bufferPool === undefined ? {} : { bufferPool: closed.bufferPool }),
          unreleasedPartitions: closed?.unreleasedPartitions ?? 0,
        };
      }),
    ];
    return {
      shuffle,
      shuffleModule: plugin.file,
      verified: differences.length === 0,
      differences,
      records,
      bytes: tasks.filter((t) => t.kind === "source").reduce((sum, t) => sum + t.bytes, 0),
      durationMs,
      parallelism: graph.parallelism,
      taskManagers: this.taskManagers.length,
      distinctWords: verification.distinctWords,
      tasks,
      processes,
    };
  }

  // ------------------------------------------------------------------------ task managers

  private forkTaskManager(index: number, configuration: Configuration): void {
    const main = fileURLToPath(new URL("./main.js", import.meta.url));
    if (!existsSync(main)) {
      throw new Error(`cannot start task managers: ${main} does not exist (build the demo first)`);
    }
    const child = fork(main, ["taskmanager", "--index", String(index)], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      serialization: "json",
      // A debugger port cannot be shared with the coordinator.
      execArgv: process.execArgv.filter((arg) => !arg.startsWith("--inspect")),
    });
    const tm = new TaskManagerHandle(index, child);
    this.taskManagers.push(tm);
    child.on("message", (message: TaskManagerMessage) => this.onMessage(tm, message));
    child.on("error", (error) => this.recordFailure(0, `${tm.label}: ${error.message}`));
    // "close" (not "exit") comes after the IPC channel delivered the worker's last messages.
    child.on("close", (code, signal) => this.onTaskManagerExit(tm, code, signal));
    tm.send({
      type: "init",
      index,
      config: configuration.toObject(),
      configDir: configuration.configDir,
      configFile: configuration.configFile,
    });
  }

  private onMessage(tm: TaskManagerHandle, message: TaskManagerMessage): void {
    switch (message.type) {
      case "ready":
        tm.ready = message;
        this.say(
          `${tm.label} ready: data port ${message.host}:${message.dataPort}, resource ${message.resourceId}\n`,
        );
        if (
          this.taskManagers.length === this.options.taskManagers &&
          this.taskManagers.every((t) => t.ready)
        ) {
          this.allReady.resolve();
        }
        return;
      case "deployed":
        tm.deployed = true;
        if (this.taskManagers.every((t) => t.deployed)) this.allDeployed.resolve();
        return;
      case "progress":
        tm.lastRssMb = message.rssMb;
        for (const task of message.tasks)
          this.progress.set(task.name, { ...task, taskManager: tm.index });
        return;
      case "source-finished":
        this.progress.set(message.task.name, { ...message.task, taskManager: tm.index });
        for (const state of this.sourceStates.values()) {
          if (state.subtask === message.task.subtaskIndex) state.state = "FINISHED";
        }
        this.sourcesFinished++;
        this.checkDone();
        return;
      case "counts":
        this.progress.set(message.task.name, { ...message.task, taskManager: tm.index });
        this.counts[message.task.subtaskIndex] = message;
        this.countsReceived++;
        this.checkDone();
        return;
      case "task-failed":
        this.recordFailure(
          3,
          `task ${message.task} on ${tm.label} failed: ${describeError(message.error)}`,
        );
        return;
      case "fatal":
        this.recordFailure(
          1,
          `${tm.label} failed (${message.phase}): ${describeError(message.error)}`,
        );
        return;
      case "producer-state-request": {
        const known = this.sourceStates.get(message.partitionId);
        const state = this.failures.length > 0 && known !== undefined ? "FAILED" : known?.state;
        tm.send({ type: "producer-state", requestId: message.requestId, state });
        return;
      }
      case "closed":
        tm.closed = message;
        return;
    }
  }

  private checkDone(): void {
    const p = this.options.parallelism;
    if (this.sourcesFinished === p && this.countsReceived === p) this.allDone.resolve();
  }

  private onTaskManagerExit(
    tm: TaskManagerHandle,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    tm.exited = true;
    tm.exit.resolve();
    if (signal !== null && signal === tm.killSignal) return;
    if (signal === null && tm.stopRequested && (code === 0 || tm.cancelRequested)) return;
    if (signal !== null) this.recordFailure(0, `${tm.label} was killed by signal ${signal}`);
    else if (tm.stopRequested)
      this.recordFailure(2, `${tm.label} exited with code ${code} while shutting down`);
    else this.recordFailure(2, `${tm.label} exited unexpectedly with code ${code}`);
  }

  // ---------------------------------------------------------------------------- failures

  private recordFailure(rank: number, message: string, exitCode = 1): void {
    this.failures.push({ rank, message, exitCode });
    if (this.failures.length === 1) this.failed.reject(new JobFailedError());
  }

  /** Awaits `promise`, failing fast when the job fails, and after `timeoutMs` if given. */
  private async phase<T>(promise: Promise<T>, timeoutMs?: number, what?: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout =
      timeoutMs === undefined
        ? undefined
        : new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              this.recordFailure(2, `timed out after ${timeoutMs / 1000} s waiting for ${what}`);
              reject(new JobFailedError());
            }, timeoutMs);
          });
    try {
      return await Promise.race([
        promise,
        this.failed.promise,
        ...(timeout === undefined ? [] : [timeout]),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  private interrupted(signal: NodeJS.Signals): void {
    if (this.interruptedBy !== undefined) {
      // A second signal while tearing down: stop waiting.
      this.killAll("SIGKILL");
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    this.interruptedBy = signal;
    this.recordFailure(-1, `interrupted by ${signal}`, signal === "SIGINT" ? 130 : 143);
  }

  /** Stops every worker still running (cancel, then SIGKILL after a grace period) and reports. */
  private async reportFailure(shuffle: string): Promise<number> {
    this.stopProgress();
    for (const tm of this.taskManagers) {
      if (tm.exited) continue;
      tm.stopRequested = true;
      tm.cancelRequested = true;
      tm.send({ type: "shutdown", cancel: true });
    }
    const allExited = () => Promise.all(this.taskManagers.map((tm) => tm.exit.promise));
    if (!(await settlesWithin(allExited(), CANCEL_GRACE_MS))) {
      this.killAll("SIGKILL");
      await settlesWithin(allExited(), CANCEL_GRACE_MS);
    }
    const [first, ...rest] = [...this.failures].sort((a, b) => a.rank - b.rank);
    const failure = first as Failure;
    const lines = [
      `error: the job failed: ${failure.message}`,
      ...rest.map((f) => `  also: ${f.message}`),
    ];
    const alive = this.taskManagers.filter((tm) => !tm.exited);
    lines.push(
      alive.length === 0
        ? `all ${this.taskManagers.length} task manager processes have exited`
        : `could not stop ${alive.map((tm) => tm.label).join(", ")}`,
    );
    this.io.stderr.write(`${lines.join("\n")}\n`);
    if (this.options.json) {
      this.io.stdout.write(
        `${JSON.stringify({
          verified: false,
          error: failure.message,
          shuffle,
          processes: [
            {
              role: "coordinator",
              pid: process.pid,
              peakRssMb: round1(process.resourceUsage().maxRSS / 1024),
            },
            ...this.taskManagers.map((tm) => ({
              role: "taskmanager",
              index: tm.index,
              pid: tm.pid,
              peakRssMb: round1(tm.closed?.peakRssMb ?? tm.lastRssMb),
            })),
          ],
        })}\n`,
      );
    }
    return failure.exitCode;
  }

  private killAll(signal: NodeJS.Signals): void {
    for (const tm of this.taskManagers) {
      if (tm.exited) continue;
      tm.stopRequested = true;
      tm.killSignal = signal;
      tm.child.kill(signal);
    }
  }

  // ----------------------------------------------------------------------------- progress

  private startProgress(): void {
    this.view = createProgressView(this.io.human);
    this.renderTimer = setInterval(() => this.view?.update(this.snapshot()), PROGRESS_RENDER_MS);
  }

  private snapshot(): ProgressSnapshot {
    return {
      elapsedMs: performance.now() - this.startedAt,
      totalRecords: this.options.records,
      tasks: [...this.progress.values()],
    };
  }

  private stopProgress(): void {
    clearInterval(this.renderTimer);
    this.renderTimer = undefined;
    this.view?.stop();
    this.view = undefined;
  }

  private say(text: string): void {
    this.io.human.write(text);
  }
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

/** True if `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
