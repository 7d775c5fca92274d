import { tmpdir } from "node:os";
import {
  ExecutionAttemptID,
  IllegalStateError,
  type IntermediateDataSetID,
  ResourceID,
  type ResultPartitionID,
} from "@sluice/core";
import { bufferTimeoutOf, Configuration } from "@sluice/runtime";
import {
  ExecutionOptions,
  type ExecutionState,
  type InputGate,
  InputGateDeploymentDescriptorCodec,
  type PartitionProducerStateProvider,
  ResultPartitionDeploymentDescriptorCodec,
  type ResultPartitionWriter,
  type ShuffleEnvironment,
  TaskManagerOptions,
} from "@sluice/runtime-api";
import { Corpus } from "./corpus.js";
import {
  type ClosedMessage,
  type CoordinatorMessage,
  type DeployMessage,
  errorInfoOf,
  type InitMessage,
  type TaskManagerMessage,
} from "./ipc-messages.js";
import { loadShufflePlugin } from "./shuffle-plugin.js";
import { CountTask } from "./tasks/count-task.js";
import { SourceTask } from "./tasks/source-task.js";

/** How often the task manager reports its tasks' counters. */
export const PROGRESS_INTERVAL_MS = 500;
/** How long a clean shutdown waits for consumers to release this worker's partitions. */
const RELEASE_WAIT_MS = 3_000;
/** A cancelled task manager exits after this even if closing hangs. */
const CANCEL_DEADLINE_MS = 2_000;

/** The part of a NetworkShuffleEnvironment the demo reads for its buffer check (duck-typed). */
interface WithNetworkBufferPool {
  readonly networkBufferPool?: {
    readonly totalNumberOfMemorySegments: number;
    getNumberOfAvailableMemorySegments(): number;
  };
}

/**
 * A worker process (Flink's TaskExecutor): started by the coordinator with `child_process.fork`
 * and an IPC channel. It loads the configured shuffle plugin itself, runs one ShuffleEnvironment,
 * creates its tasks' writers and gates from the descriptors the coordinator sends (as JSON),
 * runs the tasks and reports their counters, results and failures.
 */
export class TaskManager {
  private configuration: Configuration | undefined;
  private environment: ShuffleEnvironment | undefined;
  private corpus: Corpus | undefined;
  private readonly sources: {
    readonly task: SourceTask;
    readonly writer: ResultPartitionWriter;
  }[] = [];
  private readonly counters: { readonly task: CountTask; readonly gate: InputGate }[] = [];
  private progressTimer: NodeJS.Timeout | undefined;
  private readonly pendingStates = new Map<number, (state: ExecutionState | undefined) => void>();
  private nextRequestId = 0;
  private shuttingDown = false;

  constructor(readonly index: number) {}

  /** Wires the process: IPC messages, coordinator loss, signals, uncaught errors. */
  attach(): void {
    process.on("message", (message: CoordinatorMessage) => {
      this.onMessage(message).catch((error: unknown) => this.fatal(message.type, error));
    });
    // The coordinator died or dropped us: nothing may outlive it.
    process.on("disconnect", () => {
      if (!this.shuttingDown) process.exit(1);
    });
    // Ctrl-C reaches the whole process group; the coordinator decides how the job ends.
    process.on("SIGINT", () => {});
    process.on("uncaughtException", (error) => this.fatal("runtime", error));
    process.on("unhandledRejection", (error) => this.fatal("runtime", error));
  }

  private async onMessage(message: CoordinatorMessage): Promise<void> {
    switch (message.type) {
      case "init":
        return this.init(message);
      case "deploy":
        return this.deploy(message);
      case "start":
        return this.start();
      case "shutdown":
        return this.shutdown(message.cancel);
      case "producer-state":
        this.pendingStates.get(message.requestId)?.(message.state);
        this.pendingStates.delete(message.requestId);
        return;
    }
  }

  private async init(message: InitMessage): Promise<void> {
    const configuration = new Configuration(Object.entries(message.config), {
      configDir: message.configDir,
      configFile: message.configFile,
    });
    this.configuration = configuration;
    // Every worker loads the plugin through the loader itself, as each Flink TaskManager does.
    const { factory } = await loadShufflePlugin(configuration);
    const tmpDirs = configuration.getOptional(TaskManagerOptions.TMP_DIRS);
    const host = configuration.get(TaskManagerOptions.HOST);
    const resourceId = new ResourceID();
    const environment = factory.createShuffleEnvironment({
      configuration,
      taskExecutorResourceId: resourceId,
      networkMemorySize: 0,
      localCommunicationOnly: false,
      hostAddress: host,
      numberOfSlots: configuration.get(TaskManagerOptions.NUM_TASK_SLOTS),
      tmpDirPaths: tmpDirs === undefined ? [tmpdir()] : tmpDirs.split(",").map((d) => d.trim()),
    });
    this.environment = environment;
    const dataPort = await environment.start();
    this.send({
      type: "ready",
      index: this.index,
      pid: process.pid,
      resourceId: resourceId.toString(),
      host,
      dataPort,
    });
  }

  private deploy(message: DeployMessage): void {
    const environment = this.requireEnvironment();
    const configuration = this.configuration as Configuration;
    const bufferTimeout = bufferTimeoutOf(
      configuration.get(ExecutionOptions.BUFFER_TIMEOUT_ENABLED),
      configuration.get(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL),
    );
    for (const task of message.tasks) {
      const owner = environment.createShuffleIOOwnerContext(
        task.name,
        ExecutionAttemptID.parse(task.attemptId),
      );
      if (task.kind === "source") {
        const descriptor = ResultPartitionDeploymentDescriptorCodec.fromJSON(task.partition);
        const [writer] = environment.createResultPartitionWriters(owner, [descriptor]);
        if (writer === undefined) throw new IllegalStateError(`no writer created for ${task.name}`);
        writer.setup();
        this.corpus ??= new Corpus(task.corpus.seed);
        const corpus = this.corpus.partition(task.corpus, task.subtaskIndex);
        this.sources.push({
          task: new SourceTask(
            task.name,
            task.subtaskIndex,
            writer,
            corpus,
            descriptor.maxParallelism,
            bufferTimeout,
          ),
          writer,
        });
      } else {
        const descriptor = InputGateDeploymentDescriptorCodec.fromJSON(task.gate);
        const [gate] = environment.createInputGates(owner, this.producerStateProvider, [
          descriptor,
        ]);
        if (gate === undefined) throw new IllegalStateError(`no gate created for ${task.name}`);
        gate.setup();
        this.counters.push({ task: new CountTask(task.name, task.subtaskIndex, gate), gate });
      }
    }
    this.send({ type: "deployed", index: this.index });
  }

  /** Asks the coordinator (Flink: the JobMaster) for the state of a partition's producer. */
  private readonly producerStateProvider: PartitionProducerStateProvider = {
    requestPartitionProducerState: (
      _resultId: IntermediateDataSetID,
      partitionId: ResultPartitionID,
    ) =>
      new Promise<ExecutionState>((resolve, reject) => {
        const requestId = ++this.nextRequestId;
        this.pendingStates.set(requestId, (state) => {
          if (state === undefined)
            reject(new IllegalStateError(`the coordinator does not know partition ${partitionId}`));
          else resolve(state);
        });
        this.send({
          type: "producer-state-request",
          index: this.index,
          requestId,
          partitionId: partitionId.toString(),
        });
      }),
  };

  private start(): void {
    for (const { gate } of this.counters) gate.requestPartitions();
    this.progressTimer = setInterval(() => this.reportProgress(), PROGRESS_INTERVAL_MS);
    for (const { task, writer } of this.sources) {
      task.run().then(
        () => {
          // Finished: give the pool back; the queued data stays readable until consumed.
          writer.close();
          this.send({ type: "source-finished", index: this.index, task: task.progress() });
        },
        (error: unknown) => {
          writer.fail(error instanceof Error ? error : new Error(String(error)));
          writer.close();
          this.taskFailed(task.name, error);
        },
      );
    }
    for (const { task, gate } of this.counters) {
      task.run().then(
        async () => {
          await gate.close();
          this.send({
            type: "counts",
            index: this.index,
            task: task.progress(),
            counts: [...task.counts],
          });
        },
        async (error: unknown) => {
          this.taskFailed(task.name, error);
          await gate.close();
        },
      );
    }
  }

  private reportProgress(): void {
    this.send({
      type: "progress",
      index: this.index,
      tasks: [...this.sources, ...this.counters].map(({ task }) => task.progress()),
      rssMb: process.memoryUsage.rss() / (1024 * 1024),
    });
  }

  private taskFailed(task: string, error: unknown): void {
    if (this.shuttingDown) return;
    this.send({ type: "task-failed", index: this.index, task, error: errorInfoOf(error) });
  }

  /**
   * Clean shutdown: every task ended, so close the gates, wait until consumers released this
   * worker's partitions, check that the NetworkBufferPool got every segment back, close the
   * environment and exit. With `cancel`, running tasks are stopped and partitions failed first.
   */
  private async shutdown(cancel: boolean): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    clearInterval(this.progressTimer);
    if (cancel) {
      setTimeout(() => process.exit(1), CANCEL_DEADLINE_MS).unref();
      const cause = new IllegalStateError("the job was cancelled by the coordinator");
      for (const { task } of [...this.sources, ...this.counters]) task.cancel(cause);
      for (const { writer } of this.sources) {
        if (!writer.isFinished()) writer.fail(cause);
        writer.close();
      }
    }
    for (const { gate } of this.counters) await gate.close();
    const environment = this.environment;
    let unreleased = 0;
    if (environment !== undefined && !cancel) {
      const deadline = Date.now() + RELEASE_WAIT_MS;
      // Remote consumers release a pipelined partition with a message that may still be in
      // flight when the coordinator's shutdown arrives.
      while (
        environment.getPartitionsOccupyingLocalResources().length > 0 &&
        Date.now() < deadline
      ) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      unreleased = environment.getPartitionsOccupyingLocalResources().length;
    }
    const pool = (environment as WithNetworkBufferPool | undefined)?.networkBufferPool;
    const bufferPool =
      pool === undefined
        ? undefined
        : {
            available: pool.getNumberOfAvailableMemorySegments(),
            total: pool.totalNumberOfMemorySegments,
          };
    await environment?.close();
    const closed: ClosedMessage = {
      type: "closed",
      index: this.index,
      pid: process.pid,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      bufferPool,
      unreleasedPartitions: unreleased,
    };
    this.send(closed, () => process.exit(cancel ? 1 : 0));
  }

  private fatal(phase: string, error: unknown): void {
    const report = { type: "fatal", index: this.index, phase, error: errorInfoOf(error) } as const;
    if (!process.connected) process.exit(1);
    this.send(report, () => process.exit(1));
    setTimeout(() => process.exit(1), 1_000).unref();
  }

  private requireEnvironment(): ShuffleEnvironment {
    if (this.environment === undefined) throw new IllegalStateError("deploy before init");
    return this.environment;
  }

  private send(message: TaskManagerMessage, then?: () => void): void {
    if (!process.connected || process.send === undefined) {
      then?.();
      return;
    }
    process.send(message, undefined, {}, (error) => {
      if (error !== null && error !== undefined && then === undefined) process.exit(1);
      then?.();
    });
  }
}

/** Entry of a task-manager process: `main.js taskmanager --index <i>`. */
export function runTaskManager(argv: readonly string[]): void {
  const at = argv.indexOf("--index");
  const index = at < 0 ? Number.NaN : Number(argv[at + 1]);
  if (process.send === undefined || !Number.isInteger(index) || index < 0) {
    process.stderr.write(
      "a task manager is started by the demo's coordinator (child_process.fork with an IPC channel and --index <i>); run `pnpm demo` instead\n",
    );
    process.exit(2);
  }
  new TaskManager(index).attach();
}
