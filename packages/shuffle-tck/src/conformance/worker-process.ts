import { type ChildProcess, fork } from "node:child_process";
import {
  type ExecutionAttemptID,
  IntermediateDataSetID,
  JobID,
  ResourceID,
  ResultPartitionID,
} from "@sluice/core";
import {
  deserializeThrowable,
  type JobMasterGateway,
  serializeThrowable,
  type TaskDeploymentDescriptor,
  TaskDeploymentDescriptorCodec,
  type TaskExecutorGateway,
  type TaskManagerLocation,
  taskExecutionStateFromJSON,
} from "@sluice/runtime/plugin";
import { type PartitionInfo, PartitionInfoCodec } from "@sluice/runtime-api";
import type {
  ConsumerStatus,
  FromWorker,
  InitResult,
  ProducerStatus,
  ToWorker,
  TruncatedFiles,
  WorkerRequest,
  WorkerStatus,
} from "../messages.js";
import { resolveWorkerScript } from "./worker-script.js";

/**
 * The worker script every {@link WorkerProcess} forks: the compiled `worker/worker.js` of this
 * package, whether the kit runs from its sources, from its `dist/`, or installed in `node_modules`.
 *
 * @throws ConformanceWorkerNotFoundError when the file does not exist (the package is not built).
 */
export function workerScriptPath(): string {
  return resolveWorkerScript(import.meta.url);
}

/** How a worker process ended when it was closed. */
export interface WorkerExit {
  /** The exit code, or null when a signal ended the process (or it was killed on timeout). */
  readonly code: number | null;
  /** The signal that ended the process, if one did: a crash shows here (SIGSEGV, SIGABRT). */
  readonly signal: NodeJS.Signals | null;
  /** False when the process did not exit within the timeout after its TaskExecutor closed. */
  readonly exitedByItself: boolean;
}

/**
 * One worker process of the suite, running a TaskExecutor of the plugin under test, seen from
 * the suite as a {@link TaskExecutorGateway}: the job side deploys onto it exactly as onto any
 * TaskExecutor. Task state reports and producer-state questions come back to the job master the
 * task was submitted with.
 *
 * With {@link holdCancels}, cancel requests are kept until {@link releaseHeldCancels}: a case that
 * checks how the data plane itself propagates a failure (a producer's error reaching its
 * consumer) must not have the job master's cancellation race it. With {@link holdSubmits},
 * deployments wait until {@link releaseHeldSubmits}, as on a slow worker: a case can act between
 * a blocking partition's completion and its consumers' deployment.
 */
export class WorkerProcess implements TaskExecutorGateway {
  readonly child: ChildProcess;
  /** Resolves when the process exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Hold cancel requests until {@link releaseHeldCancels}. */
  holdCancels = false;
  /** Hold task deployments until {@link releaseHeldSubmits}. */
  holdSubmits = false;
  private readonly heldCancels: ExecutionAttemptID[] = [];
  private readonly heldSubmits: (() => void)[] = [];
  private readonly pending = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  private readonly jobMasters = new Map<string, JobMasterGateway>();
  private nextId = 1;
  private hasExited = false;
  /** True once close() was called: the worker disconnects, then exits by itself. */
  private closing = false;
  private currentLocation: TaskManagerLocation | undefined;

  constructor(readonly label: string) {
    this.child = fork(workerScriptPath(), ["shuffle-tck-worker", label], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      execArgv: [],
    });
    this.child.on("message", (message: FromWorker) => this.onMessage(message));
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.hasExited = true;
        for (const waiter of this.pending.values()) {
          waiter.reject(new Error(`worker ${label} exited (code ${code}, signal ${signal})`));
        }
        this.pending.clear();
        resolve({ code, signal });
      });
    });
  }

  /** Where the worker's TaskExecutor runs (after {@link init}). */
  get location(): TaskManagerLocation {
    if (this.currentLocation === undefined) throw new Error(`worker ${this.label} is not started`);
    return this.currentLocation;
  }

  /** Starts the worker's TaskExecutor with `config`. */
  async init(config: Record<string, unknown>, configDir?: string): Promise<void> {
    const result = await this.request<InitResult>({
      cmd: "init",
      config,
      ...(configDir === undefined ? {} : { configDir }),
    });
    this.currentLocation = {
      resourceId: ResourceID.fromHex(result.resourceId),
      host: result.host,
      dataPort: result.dataPort,
    };
  }

  async submitTask(
    descriptor: TaskDeploymentDescriptor,
    jobMaster: JobMasterGateway,
  ): Promise<void> {
    if (this.holdSubmits) await new Promise<void>((resolve) => this.heldSubmits.push(resolve));
    this.jobMasters.set(descriptor.jobId.toString(), jobMaster);
    await this.request({
      cmd: "submit",
      descriptor: TaskDeploymentDescriptorCodec.toJSON(descriptor),
    });
  }

  async cancelTask(attempt: ExecutionAttemptID): Promise<void> {
    if (this.holdCancels) {
      this.heldCancels.push(attempt);
      return;
    }
    await this.request({ cmd: "cancel", attempt: attempt.toString() });
  }

  async updatePartitions(
    attempt: ExecutionAttemptID,
    infos: readonly PartitionInfo[],
  ): Promise<void> {
    await this.request({
      cmd: "update",
      attempt: attempt.toString(),
      infos: infos.map((info) => PartitionInfoCodec.toJSON(info)),
    });
  }

  async releasePartitions(jobId: JobID, ids: readonly ResultPartitionID[]): Promise<void> {
    await this.request({
      cmd: "release",
      jobId: jobId.toString(),
      partitions: ids.map((id) => id.toString()),
    });
  }

  /** Deployments waiting for {@link releaseHeldSubmits}. */
  get numberOfHeldSubmits(): number {
    return this.heldSubmits.length;
  }

  /** Lets the held deployments go on (and stops holding). */
  releaseHeldSubmits(): void {
    this.holdSubmits = false;
    for (const resume of this.heldSubmits.splice(0)) resume();
  }

  /** Sends the cancel requests held so far (and stops holding). */
  async releaseHeldCancels(): Promise<void> {
    this.holdCancels = false;
    const held = this.heldCancels.splice(0);
    await Promise.all(held.map((attempt) => this.cancelTask(attempt).catch(() => undefined)));
  }

  /** What a producer task on this worker emitted so far. */
  producerStatus(attempt: ExecutionAttemptID): Promise<ProducerStatus> {
    return this.request({ cmd: "producerStatus", attempt: attempt.toString() });
  }

  /** What a consumer task on this worker received so far. */
  consumerStatus(attempt: ExecutionAttemptID): Promise<ConsumerStatus> {
    return this.request({ cmd: "consumerStatus", attempt: attempt.toString() });
  }

  /** Lets a stalled consumer task read again, or a paused producer task write again. */
  async resume(attempt: ExecutionAttemptID): Promise<void> {
    await this.request({ cmd: "resume", attempt: attempt.toString() });
  }

  /** Partitions that still hold resources on the worker. */
  async partitionsOccupyingLocalResources(): Promise<number> {
    return (await this.status()).partitions;
  }

  /** What the worker holds: partitions, the files in its `io.tmp.dirs`, running tasks. */
  status(): Promise<WorkerStatus> {
    return this.request({ cmd: "status" });
  }

  /** Cuts every file in the worker's `io.tmp.dirs` to half its size; returns their paths. */
  async truncatePartitionFiles(): Promise<readonly string[]> {
    return (await this.request<TruncatedFiles>({ cmd: "truncatePartitionFiles" })).files;
  }

  /**
   * Closes the TaskExecutor and waits for the process to exit on its own: a handle the plugin
   * left open keeps it alive, which shows as `exitedByItself: false`.
   */
  async close(timeoutMs = 10_000): Promise<WorkerExit> {
    if (this.hasExited) {
      return { code: this.child.exitCode, signal: this.child.signalCode, exitedByItself: true };
    }
    this.closing = true;
    await this.request({ cmd: "close" });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    const outcome = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (outcome === "timeout") {
      this.kill();
      return { code: null, signal: null, exitedByItself: false };
    }
    return { code: outcome.code, signal: outcome.signal, exitedByItself: true };
  }

  /** SIGKILL, as a crash would. */
  kill(): void {
    if (!this.hasExited) this.child.kill("SIGKILL");
  }

  private request<T>(request: WorkerRequest): Promise<T> {
    if (this.hasExited) return Promise.reject(new Error(`worker ${this.label} has exited`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.send({ kind: "request", id, ...request });
    });
  }

  private send(message: ToWorker): void {
    if (this.hasExited || !this.child.connected) return;
    this.child.send(message, (error) => {
      // A send fails when the worker died while the message was on its way (EPIPE). Its exit
      // handler rejects every pending request, which is how the suite learns of it; the kill
      // makes sure the exit comes. A worker being closed disconnects before it exits, so a
      // message sent meanwhile (a cancel from the job side) fails too: that one must not kill a
      // worker whose own exit the suite is waiting for (close() times out if it never comes).
      if (error !== null && error !== undefined && !this.closing) this.kill();
    });
  }

  private onMessage(message: FromWorker): void {
    switch (message.kind) {
      case "response": {
        const waiter = this.pending.get(message.id);
        if (waiter === undefined) return;
        this.pending.delete(message.id);
        if (message.ok) waiter.resolve(message.result);
        else waiter.reject(deserializeThrowable(message.error));
        return;
      }
      case "state": {
        const update = taskExecutionStateFromJSON(message.update);
        this.jobMasters.get(message.update.jobId)?.updateTaskExecutionState(update);
        return;
      }
      case "producer-state-request": {
        const jobMaster = this.jobMasters.get(message.jobId);
        const answer = (response: Omit<Extract<ToWorker, { kind: "producer-state" }>, "kind">) =>
          this.send({ kind: "producer-state", ...response });
        if (jobMaster === undefined) {
          answer({
            requestId: message.requestId,
            error: serializeThrowable(new Error(`no job ${message.jobId} on this suite`)),
          });
          return;
        }
        jobMaster
          .requestPartitionProducerState(
            JobID.fromHex(message.jobId),
            IntermediateDataSetID.fromHex(message.resultId),
            ResultPartitionID.parse(message.partitionId),
          )
          .then(
            (state) => answer({ requestId: message.requestId, state }),
            (error: unknown) =>
              answer({ requestId: message.requestId, error: serializeThrowable(error) }),
          );
        return;
      }
    }
  }
}
