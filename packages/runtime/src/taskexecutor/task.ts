import {
  CancelledError,
  type ExecutionAttemptID,
  IllegalArgumentError,
  IllegalStateError,
  type JobID,
  type TypeSerializer,
} from "@sluice/core";
import type {
  ExecutionState,
  InputGate,
  JsonObject,
  JsonValue,
  ResultPartitionWriter,
} from "@sluice/runtime-api";
import { RecordReader, type RecordReaderOptions } from "../io/record-reader.js";
import { type BufferTimeout, createRecordWriter, type RecordWriter } from "../io/record-writer.js";
import type { TaskMetricGroup } from "../metrics/groups/task-metric-group.js";
import type { ChannelSelector } from "../partitioner/channel-selector.js";
import { serializeThrowable } from "./serialized-throwable.js";
import type { TaskDeploymentDescriptor } from "./task-deployment-descriptor.js";
import { taskNameWithSubtask } from "./task-deployment-descriptor.js";
import type { TaskExecutionState } from "./task-execution-state.js";
import type { TaskInvokable } from "./user-code-registry.js";

/** The terminal states of a task. */
const TERMINAL: ReadonlySet<ExecutionState> = new Set(["FINISHED", "FAILED", "CANCELED"]);

/** How one output of a task is written: its writer from the plugin and the record format. */
export interface TaskOutput {
  readonly partition: ResultPartitionWriter;
  readonly serializer: TypeSerializer<unknown>;
  readonly selector: ChannelSelector<unknown>;
}

/** How one input of a task is read: its gate from the plugin and the record format. */
export interface TaskInput {
  readonly gate: InputGate;
  readonly serializer: TypeSerializer<unknown>;
}

/** What the TaskExecutor hands a Task it deployed. Internal to the runtime. */
export interface TaskResources {
  readonly descriptor: TaskDeploymentDescriptor;
  readonly outputs: readonly TaskOutput[];
  readonly inputs: readonly TaskInput[];
  readonly bufferTimeout: BufferTimeout;
  readonly readerOptions: RecordReaderOptions;
  /** The task's metric group: its readers and writers count records and time into `io`. */
  readonly metricGroup: TaskMetricGroup;
  /** Receives every state change; must not throw. */
  readonly onStateChange: (update: TaskExecutionState) => void;
}

/**
 * One deployed execution attempt of a subtask on a TaskExecutor (Flink's `Task`): it owns the
 * writers of the partitions it produces and the gates it reads, and runs the task's code.
 *
 * Lifecycle (Flink's `ExecutionState`): `TaskExecutor.deployTask` returns it `INITIALIZING`, with
 * its writers and gates set up and its partitions requested. `run(invokable)` makes it `RUNNING`
 * and calls the invokable, which reads through {@link reader} and writes through {@link writer}.
 * When the invokable returns, the task flushes and finishes its partitions (EndOfPartition to
 * every consumer), closes its gates and is `FINISHED`. When it throws, the task fails its
 * partitions with the error (consumers see it), closes its gates and is `FAILED`. `cancel()`
 * aborts {@link signal}, releases the partitions and gates at once (which wakes a task blocked on
 * back-pressure or input) and ends `CANCELED`. Every path returns every buffer to its pool.
 */
export class Task {
  /** The job. */
  readonly jobId: JobID;
  /** The execution attempt. */
  readonly executionAttemptId: ExecutionAttemptID;
  /** The vertex name (`Count`). */
  readonly taskName: string;
  /** The name Flink prints: `Count (1/2)#0`. */
  readonly name: string;
  /** 0-based subtask index. */
  readonly subtaskIndex: number;
  /** The vertex's parallelism. */
  readonly numberOfSubtasks: number;
  /** The attempt number (0 for the first attempt). */
  readonly attemptNumber: number;
  /** The task's parameters from its deployment descriptor. */
  readonly configuration: JsonObject;
  /** The plugin's writers, one per produced partition (for metrics and tests). */
  readonly partitions: readonly ResultPartitionWriter[];
  /** The plugin's gates, one per input (for metrics and tests). */
  readonly gates: readonly InputGate[];
  /**
   * The task's metrics (scope `metrics.scope.task`): records in and out, idle, back-pressured and
   * busy time, the shuffle's task metrics. A task's code may add its own
   * (`task.metricGroup.counter("lateEvents")`, `task.metricGroup.addOperator("Tokenizer")`).
   */
  readonly metricGroup: TaskMetricGroup;
  /** Resolves with the terminal state (FINISHED, FAILED or CANCELED) once everything is released. */
  readonly terminated: Promise<TaskExecutionState>;
  /**
   * Resolves once every partition the task produced was released: for pipelined partitions,
   * after the consumers read them to the end (Flink's "partition consumed"). Partitions of plugins
   * that cannot tell count as released when the task ends.
   */
  readonly partitionsConsumed: Promise<void>;

  private readonly resources: TaskResources;
  private readonly abort = new AbortController();
  private currentState: ExecutionState = "INITIALIZING";
  private failure: Error | undefined;
  private recordWriters: RecordWriter<unknown>[] = [];
  private recordReaders: RecordReader<unknown>[] = [];
  private resolveTerminated!: (state: TaskExecutionState) => void;
  private released = false;

  constructor(resources: TaskResources) {
    const { descriptor } = resources;
    this.resources = resources;
    this.jobId = descriptor.jobId;
    this.executionAttemptId = descriptor.executionAttemptId;
    this.taskName = descriptor.taskName;
    this.name = taskNameWithSubtask(descriptor);
    this.subtaskIndex = descriptor.executionAttemptId.subtaskIndex;
    this.attemptNumber = descriptor.executionAttemptId.attemptNumber;
    this.numberOfSubtasks = descriptor.numberOfSubtasks;
    this.configuration = descriptor.taskConfiguration;
    this.partitions = Object.freeze(resources.outputs.map((output) => output.partition));
    this.gates = Object.freeze(resources.inputs.map((input) => input.gate));
    this.metricGroup = resources.metricGroup;
    this.terminated = new Promise((resolve) => {
      this.resolveTerminated = resolve;
    });
    const consumed = this.partitions.map(
      (partition) => partition.getReleaseFuture?.() ?? this.terminated.then(() => undefined),
    );
    this.partitionsConsumed = Promise.all(consumed).then(() => undefined);
    this.report({});
  }

  /** The current state. */
  get state(): ExecutionState {
    return this.currentState;
  }

  /** Why the task failed or was canceled, once it did. */
  get failureCause(): Error | undefined {
    return this.failure;
  }

  /** Aborted when the task is canceled or fails from outside: the invokable should stop. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /**
   * The record writer of produced partition `index` (in descriptor order). Usable only while the
   * task is RUNNING.
   *
   * @throws IllegalStateError when the task is not RUNNING; IllegalArgumentError for a bad index.
   */
  writer<T>(index = 0): RecordWriter<T> {
    this.checkRunning("writer", index);
    return this.pick(this.recordWriters, index, "writer", "produced partitions") as RecordWriter<T>;
  }

  /**
   * The record reader of input gate `index` (in descriptor order). Usable only while the task is
   * RUNNING.
   *
   * @throws IllegalStateError when the task is not RUNNING; IllegalArgumentError for a bad index.
   */
  reader<T>(index = 0): RecordReader<T> {
    this.checkRunning("reader", index);
    return this.pick(this.recordReaders, index, "reader", "input gates") as RecordReader<T>;
  }

  /**
   * Runs the task's code: RUNNING, then `invokable(this)`, then FINISHED (partitions finished and
   * gates closed) or FAILED / CANCELED. Resolves with what the invokable returned.
   *
   * @throws IllegalStateError when the task is not INITIALIZING (already run, canceled or failed).
   * @throws the invokable's error (the task is then FAILED), or CancelledError when canceled.
   */
  async run(invokable: TaskInvokable<Task>): Promise<JsonValue | undefined> {
    if (this.currentState !== "INITIALIZING" || this.failure !== undefined) {
      const why = this.failure === undefined ? "" : ` (${this.failure.message})`;
      throw new IllegalStateError(`${this.name} cannot run: it is ${this.currentState}${why}`);
    }
    this.createRecordWritersAndReaders();
    this.metricGroup.io.markTaskStart();
    this.transition("RUNNING");
    let result: JsonValue | undefined;
    try {
      result = (await invokable(this)) ?? undefined;
      this.checkNotAborted();
      await this.finishPartitions();
      this.checkNotAborted();
    } catch (error) {
      this.failure ??= asError(error);
      const cause = this.failure;
      await this.releaseResources(cause);
      this.terminate(this.state === "CANCELING" ? "CANCELED" : "FAILED", cause);
      throw cause;
    }
    await this.closeInputs();
    this.released = true;
    this.terminate("FINISHED", undefined, result);
    return result;
  }

  /**
   * Cancels the task (Flink's `cancelExecution`): aborts {@link signal} and releases its
   * partitions (consumers see a CancelledError) and gates. A task that was not run yet ends
   * CANCELED at once; a running one when its invokable returns. Idempotent.
   */
  cancel(reason = `${this.name} was canceled`): void {
    this.stop("CANCELING", new CancelledError(reason));
  }

  /**
   * Fails the task from outside (Flink's `failExternally`), e.g. when its input cannot be
   * updated: like {@link cancel}, but it ends FAILED with `cause`.
   */
  fail(cause: Error): void {
    this.stop("FAILED", cause);
  }

  private stop(next: "CANCELING" | "FAILED", cause: Error): void {
    if (TERMINAL.has(this.currentState) || this.currentState === "CANCELING") return;
    if (this.failure !== undefined) return;
    this.failure = cause;
    const wasRunning = this.currentState === "RUNNING";
    if (next === "CANCELING") this.transition("CANCELING");
    this.abort.abort(cause);
    const released = this.releaseResources(cause);
    if (!wasRunning) {
      // Nothing runs the task's code: end it here.
      void released.then(() => this.terminate(next === "CANCELING" ? "CANCELED" : "FAILED", cause));
    }
  }

  private createRecordWritersAndReaders(): void {
    const { outputs, inputs, bufferTimeout, readerOptions } = this.resources;
    const io = this.metricGroup.io;
    this.recordWriters = outputs.map(({ partition, serializer, selector }) =>
      createRecordWriter(partition, serializer, selector, {
        taskName: this.name,
        bufferTimeout,
        numRecordsOut: io.numRecordsOut,
        backPressuredTime: io.backPressuredTimeMsPerSecond,
      }),
    );
    const metered = { numRecordsIn: io.numRecordsIn, idleTime: io.idleTimeMsPerSecond };
    this.recordReaders = inputs.map(
      ({ gate, serializer }) =>
        new RecordReader(gate, serializer, { ...readerOptions, ...metered }),
    );
  }

  /** Flushes and finishes every partition (EndOfPartition), waiting out back-pressure first. */
  private async finishPartitions(): Promise<void> {
    for (const writer of this.recordWriters) {
      writer.flushAll();
      writer.close();
    }
    const backPressuredTime = this.metricGroup.io.backPressuredTimeMsPerSecond;
    for (const partition of this.partitions) {
      // A record that ran out of buffers completes as buffers come back; finish() needs it done.
      // Waiting for that is back-pressure like any other wait for an output.
      if (!partition.isAvailable()) {
        backPressuredTime.markStart();
        while (!partition.isAvailable()) await partition.getAvailableFuture();
        backPressuredTime.markEnd();
      }
      this.checkNotAborted();
      partition.finish();
      // A blocking partition finishes asynchronously (its last data is still being written to
      // disk): the task is FINISHED only once its output is complete.
      while (!partition.isAvailable()) await partition.getAvailableFuture();
      const failure = partition.getFailureCause?.();
      if (failure !== undefined) throw failure;
      partition.close();
    }
  }

  private async closeInputs(): Promise<void> {
    for (const reader of this.recordReaders) reader.close();
    await Promise.all(this.gates.map((gate) => gate.close()));
  }

  /** Fails every partition that is not finished and closes everything. Runs once. */
  private async releaseResources(cause: Error): Promise<void> {
    if (this.released) return;
    this.released = true;
    for (const writer of this.recordWriters) writer.close();
    for (const partition of this.partitions) {
      if (!partition.isFinished() && !partition.isReleased()) partition.fail(cause);
      partition.close();
    }
    await this.closeInputs();
  }

  private checkNotAborted(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  private checkRunning(what: string, index: number): void {
    if (this.currentState === "RUNNING") return;
    const hint =
      this.currentState === "INITIALIZING" ? "; call task.run(invokable) to start it" : "";
    throw new IllegalStateError(
      `${this.name}: ${what} ${index} is usable only while the task is RUNNING, but it is ${this.currentState}${hint}`,
    );
  }

  private pick<V>(list: readonly V[], index: number, what: string, plural: string): V {
    const value = Number.isInteger(index) ? list[index] : undefined;
    if (value === undefined) {
      throw new IllegalArgumentError(
        `${this.name}: no ${what} ${index}; the task has ${list.length} ${plural}`,
      );
    }
    return value;
  }

  private transition(state: ExecutionState): void {
    this.currentState = state;
    this.report({});
  }

  private terminate(
    state: "FINISHED" | "FAILED" | "CANCELED",
    cause: Error | undefined,
    result?: JsonValue,
  ): void {
    if (TERMINAL.has(this.currentState)) return;
    this.currentState = state;
    const update = this.report({
      ...(cause === undefined ? {} : { error: serializeThrowable(cause) }),
      ...(result === undefined ? {} : { result }),
    });
    this.resolveTerminated(update);
  }

  private report(extra: Pick<TaskExecutionState, "error" | "result">): TaskExecutionState {
    const update: TaskExecutionState = {
      jobId: this.jobId,
      executionAttemptId: this.executionAttemptId,
      state: this.currentState,
      ...extra,
    };
    this.resources.onStateChange(update);
    return update;
  }

  toString(): string {
    return `Task ${this.name} (${this.executionAttemptId}) ${this.currentState}`;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
