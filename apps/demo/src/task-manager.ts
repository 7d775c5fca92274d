import { hostname } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { ConfigurationError, ExecutionAttemptID, JobID, ResultPartitionID } from "@sluice/core";
import {
  Configuration,
  describeThrowable,
  serializeThrowable,
  TaskDeploymentDescriptorCodec,
  type TaskExecutionState,
  TaskExecutor,
} from "@sluice/runtime";
import {
  HeartbeatManagerOptions,
  JobManagerOptions,
  NettyShuffleEnvironmentOptions,
  PartitionInfoCodec,
  TaskManagerOptions,
} from "@sluice/runtime-api";
import type { TaskManagerCommand } from "./cli.js";
import { type ConnectedJobManager, connectToJobManager } from "./cluster/connect-to-job-manager.js";
import {
  CONTROL_PLANE_VERSION,
  HOST_LOCAL_KEYS,
  type ShutdownReport,
} from "./cluster/control-plane-messages.js";
import { readControlPlaneTls } from "./cluster/control-plane-tls.js";
import { HeartbeatMonitor } from "./cluster/heartbeat-monitor.js";
import { RemoteJobMaster } from "./cluster/remote-job-master.js";
import { APP_DIR, APP_VERSION, pluginIdentity, SHUFFLE_KEY } from "./shuffle-plugin.js";
import type { TaskProgress } from "./task-progress.js";
import { wordCountInvokables } from "./word-count-job.js";

/** How often the task manager reports its tasks' counters. */
export const PROGRESS_INTERVAL_MS = 500;
/** How long a clean shutdown waits for consumers to release this worker's partitions. */
const RELEASE_WAIT_MS = 3_000;
/** How long closing may take on a failure before the process exits anyway. */
const CLOSE_DEADLINE_MS = 2_000;
/** How long a task manager keeps retrying a refused connection to the job manager. */
const CONNECT_RETRY_MS = 30_000;

/** The part of a NetworkShuffleEnvironment the demo reads for its buffer check (duck-typed). */
interface WithNetworkBufferPool {
  readonly networkBufferPool?: {
    readonly totalNumberOfMemorySegments: number;
    getNumberOfAvailableMemorySegments(): number;
  };
}

/**
 * A task manager process (Flink's TaskManagerRunner): connects to the job manager, gets the job's
 * configuration, starts a TaskExecutor with the word count's code, registers it, and then runs
 * whatever the job manager deploys, reporting task states and counters back. It exits when the
 * job manager says the job ended (0, or 1 when the job failed), or when it loses the job manager
 * (its connection closed, or no heartbeat request for `heartbeat.timeout`): 1.
 */
export class TaskManager {
  private executor: TaskExecutor | undefined;
  private jobManager: ConnectedJobManager | undefined;
  private readonly progress = new Map<string, () => TaskProgress>();
  private progressTimer: NodeJS.Timeout | undefined;
  private heartbeats: HeartbeatMonitor | undefined;
  private exitCode: number | undefined;
  private readonly ended: Promise<number>;
  private end!: (code: number) => void;

  constructor(
    private readonly command: TaskManagerCommand,
    private readonly stderr: NodeJS.WritableStream,
    private readonly log: (line: string) => void,
  ) {
    this.ended = new Promise((resolve) => {
      this.end = resolve;
    });
  }

  /** Runs until the job ends or the job manager is lost; resolves with the exit code. */
  async run(): Promise<number> {
    try {
      await this.start();
    } catch (error) {
      // Nothing of a half-started task manager may stay behind (or report a lost job manager).
      this.exitCode ??= 1;
      this.stopTimers();
      this.jobManager?.connection.close("the task manager failed to start");
      await this.executor?.close();
      throw error;
    }
    return this.ended;
  }

  private async start(): Promise<void> {
    const own = Configuration.load({
      ...(this.command.configFile === undefined ? {} : { configFile: this.command.configFile }),
      args: this.command.dynamicProperties,
    });
    if (this.command.shuffle !== undefined) own.set(SHUFFLE_KEY, this.command.shuffle);
    const host = this.command.jobManager?.host ?? own.getOptional(JobManagerOptions.ADDRESS);
    if (host === undefined) {
      throw new ConfigurationError(
        `a task manager needs the job manager's address: --jobmanager <host:port> or ${JobManagerOptions.ADDRESS.key}`,
      );
    }
    const port = this.command.jobManager?.port ?? own.get(JobManagerOptions.PORT);
    this.jobManager = await connectToJobManager({
      host,
      port,
      tls: readControlPlaneTls(own),
      maxMessageSize: own.get(NettyShuffleEnvironmentOptions.MAX_FRAME_SIZE),
      requestTimeoutMs: own.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT),
      retryForMs: CONNECT_RETRY_MS,
      onProtocolError: (error) => this.warn(error.message),
    });
    const { connection, localAddress } = this.jobManager;
    void connection.closed.then((why) => this.lost(why));

    const hello = await connection.call("hello", {
      version: CONTROL_PLANE_VERSION,
      appVersion: APP_VERSION,
      pid: process.pid,
      hostname: hostname(),
    });
    const configuration = this.effectiveConfiguration(own, hello.configuration, localAddress);
    this.heartbeats = new HeartbeatMonitor(
      configuration.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT),
      (silentForMs) =>
        this.lost(
          `no heartbeat request from the job manager for ${silentForMs} ms (heartbeat.timeout)`,
        ),
    );
    this.serve();

    const executor = await TaskExecutor.start(configuration, {
      invokables: wordCountInvokables(this.progress),
      loader: { applicationDirs: [APP_DIR] },
    });
    this.executor = executor;
    const { index } = await connection.call("registerTaskExecutor", {
      resourceId: executor.resourceId.toString(),
      host: executor.location.host,
      dataPort: executor.location.dataPort,
      plugin: pluginIdentity(configuration, executor.plugin),
    });
    this.log(
      `task manager ${index} (pid ${process.pid}) registered with the job manager at ${host}:${port}: data port ${executor.location.host}:${executor.location.dataPort}, resource ${executor.resourceId}\n`,
    );
    this.progressTimer = setInterval(() => this.reportProgress(), PROGRESS_INTERVAL_MS);
  }

  /**
   * The job manager's configuration with this host's own keys on top. Unless this task manager
   * sets them, it announces the address it reaches the job manager from (as Flink's task managers
   * do) and binds its data server to that address.
   */
  private effectiveConfiguration(
    own: Configuration,
    fromJobManager: Record<string, unknown>,
    localAddress: string,
  ): Configuration {
    const shipped = Object.entries(fromJobManager).filter(([key]) => !HOST_LOCAL_KEYS.has(key));
    const configuration = new Configuration([...shipped, ...Object.entries(own.toObject())], {
      ...(own.configDir === undefined ? {} : { configDir: own.configDir }),
      ...(own.configFile === undefined ? {} : { configFile: own.configFile }),
    });
    if (!own.contains(TaskManagerOptions.HOST) && localAddress !== "") {
      configuration.set(TaskManagerOptions.HOST, localAddress);
    }
    if (!own.contains(NettyShuffleEnvironmentOptions.DATA_BIND_HOST)) {
      configuration.set(
        NettyShuffleEnvironmentOptions.DATA_BIND_HOST,
        configuration.get(TaskManagerOptions.HOST),
      );
    }
    return configuration;
  }

  /** Answers the job manager's requests. */
  private serve(): void {
    const { connection } = this.jobManager as ConnectedJobManager;
    const executor = () => {
      if (this.executor === undefined) throw new Error("the TaskExecutor is not running yet");
      return this.executor;
    };
    const jobMaster = new RemoteJobMaster(
      connection,
      (update) => this.finalProgress(update),
      // Once the job manager is gone, its loss is the report; each unsent update is not news.
      (message) => {
        if (this.exitCode === undefined) this.warn(message);
      },
    );
    connection.handle("heartbeat", () => {
      this.heartbeats?.received();
      return {};
    });
    connection.handle("submitTask", async ({ descriptor }) => {
      // The codec checks every field and names the bad one (DescriptorError in the reply).
      await executor().submitTask(TaskDeploymentDescriptorCodec.fromJSON(descriptor), jobMaster);
      return null;
    });
    connection.handle("cancelTask", async ({ executionAttemptId }) => {
      await executor().cancelTask(ExecutionAttemptID.parse(executionAttemptId));
      return null;
    });
    connection.handle("updatePartitions", async ({ executionAttemptId, partitionInfos }) => {
      await executor().updatePartitions(
        ExecutionAttemptID.parse(executionAttemptId),
        partitionInfos.map((info) => PartitionInfoCodec.fromJSON(info)),
      );
      return null;
    });
    connection.handle("releasePartitions", async ({ jobId, partitionIds }) => {
      await executor().releasePartitions(
        JobID.fromHex(jobId),
        partitionIds.map((id) => ResultPartitionID.parse(id)),
      );
      return null;
    });
    connection.handle("shutdown", async ({ reason, failed }) => {
      const report = await this.shutdown(failed);
      if (failed) this.log(`task manager ${process.pid}: the job failed: ${reason}\n`);
      // The job manager closes the connection once it has the report; a job manager that
      // vanishes instead must not keep this process waiting.
      setTimeout(() => this.finish(this.exitCode ?? 1), CLOSE_DEADLINE_MS).unref();
      return report;
    });
  }

  private finalProgress(update: TaskExecutionState): TaskProgress | undefined {
    const key = update.executionAttemptId.toString();
    const probe = this.progress.get(key);
    this.progress.delete(key);
    return probe?.();
  }

  private reportProgress(): void {
    this.jobManager?.connection.notify("reportProgress", {
      tasks: [...this.progress.values()].map((probe) => probe()),
      rssMb: process.memoryUsage.rss() / (1024 * 1024),
    });
  }

  /**
   * The job ended: close the TaskExecutor, after waiting (on success) until consumers released
   * this worker's partitions, and report whether every network buffer came back. The process
   * exits once the job manager closed the connection.
   */
  private async shutdown(failed: boolean): Promise<ShutdownReport> {
    this.exitCode = failed ? 1 : 0;
    this.stopTimers();
    const executor = this.executor;
    if (executor === undefined) {
      return { peakRssMb: peakRssMb(), bufferPool: null, unreleasedPartitions: 0 };
    }
    const environment = executor.shuffleEnvironment;
    let unreleased = 0;
    if (!failed) {
      // A remote consumer releases a pipelined partition with a message that may still be in
      // flight when the job manager's shutdown arrives.
      const deadline = Date.now() + RELEASE_WAIT_MS;
      while (
        environment.getPartitionsOccupyingLocalResources().length > 0 &&
        Date.now() < deadline
      ) {
        await delay(10);
      }
      unreleased = environment.getPartitionsOccupyingLocalResources().length;
    }
    await executor.close();
    const pool = (environment as WithNetworkBufferPool).networkBufferPool;
    return {
      peakRssMb: peakRssMb(),
      bufferPool:
        pool === undefined
          ? null
          : {
              available: pool.getNumberOfAvailableMemorySegments(),
              total: pool.totalNumberOfMemorySegments,
            },
      unreleasedPartitions: unreleased,
    };
  }

  /** The connection closed or heartbeats stopped. */
  private lost(why: string): void {
    if (this.exitCode !== undefined) {
      // Shut down by the job manager, which then closed the connection.
      this.finish(this.exitCode);
      return;
    }
    this.exitCode = 1;
    this.stderr.write(`error: task manager (pid ${process.pid}) lost the job manager: ${why}\n`);
    this.jobManager?.connection.terminate();
    void this.closeWithin().then(() => this.finish(1));
  }

  /** Ctrl-C or SIGTERM on a task manager: cancel its tasks, free its memory, exit. */
  interrupted(signal: NodeJS.Signals): void {
    const code = signal === "SIGINT" ? 130 : 143;
    this.exitCode = code;
    this.jobManager?.connection.close(`interrupted by ${signal}`);
    void this.closeWithin().then(() => this.finish(code));
  }

  private async closeWithin(): Promise<void> {
    this.stopTimers();
    const closing = this.executor?.close();
    if (closing === undefined) return;
    await Promise.race([closing, delay(CLOSE_DEADLINE_MS, undefined, { ref: false })]);
  }

  private stopTimers(): void {
    clearInterval(this.progressTimer);
    this.heartbeats?.stop();
  }

  private finish(code: number): void {
    this.stopTimers();
    this.end(code);
  }

  private warn(message: string): void {
    this.stderr.write(`warning: task manager (pid ${process.pid}): ${message}\n`);
  }
}

function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

/** Runs the task manager role; resolves with the process exit code. */
export async function runTaskManager(
  command: TaskManagerCommand,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  const log = (line: string) => {
    if (!command.quiet) io.stdout.write(line);
  };
  const taskManager = new TaskManager(command, io.stderr, log);
  const onSignal = (signal: NodeJS.Signals) => taskManager.interrupted(signal);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    return await taskManager.run();
  } catch (error) {
    const code = isConfigurationProblem(error) ? 2 : 1;
    io.stderr.write(
      `error: task manager (pid ${process.pid}): ${describeThrowable(serializeThrowable(error))}\n`,
    );
    return code;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** A bad configuration, or a job manager that refused this task manager for one. */
function isConfigurationProblem(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === "SLUICE_ERR_CONFIG" || code === "SLUICE_ERR_PROTOCOL";
}
