import {
  CancelledError,
  deferred,
  EndOfData,
  type ExecutionAttemptID,
  IllegalArgumentError,
  IllegalStateError,
  type JobID,
  SnapshotType,
  StopMode,
} from "@sluice/core";
import type {
  ExecutionState,
  InputGate,
  JsonObject,
  JsonValue,
  ResultPartitionWriter,
} from "@sluice/runtime-api";
import type { CheckpointBarrierHandler } from "../checkpointing/checkpoint-barrier-handler.js";
import { CheckpointError } from "../checkpointing/checkpoint-error.js";
import type { CheckpointHandler } from "../checkpointing/checkpoint-handler.js";
import type { CheckpointListener } from "../checkpointing/checkpoint-listener.js";
import type { TaskCheckpointStats } from "../checkpointing/subtask-checkpoint-coordinator.js";
import { channelStateSize, EMPTY_CHANNEL_STATE } from "../checkpointing/task-channel-state.js";
import type { RecordReader } from "../io/record-reader.js";
import type { RecordWriter } from "../io/record-writer.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import {
  CHECKPOINT_TRIGGER,
  type CheckpointTriggerOptions,
  isSynchronousSavepoint,
} from "../messages/checkpoint-trigger-options.js";
import type { CheckpointingMode } from "../messages/checkpointing-mode.js";
import { NO_LEADERSHIP_EPOCH } from "../messages/leadership-epoch.js";
import { serializeThrowable } from "../messages/serialized-throwable.js";
import { taskNameWithSubtask } from "../messages/task-deployment-descriptor.js";
import type { TaskExecutionState } from "../messages/task-execution-state.js";
import { isTerminal } from "../messages/task-execution-state.js";
import type { TaskMetricGroup } from "../metrics/groups/task-metric-group.js";
import type { KeyGroupRange } from "../partitioner/key-group-range.js";
import {
  computeDefaultMaxParallelism,
  computeKeyGroupRangeForOperatorIndex,
} from "../partitioner/key-group-range-assignment.js";
import { asError } from "../util/as-error.js";
import { allDataProcessed, checkAllRecordsProcessedHandshake } from "./all-data-processed.js";
import { startBufferDebloating } from "./buffer-debloating.js";
import { CheckpointNotifications } from "./checkpoint-notifications.js";
import { anyPendingRecord, outputsAvailableFuture } from "./output-availability.js";
import { startTask } from "./starting-task.js";
import { TaskMailbox } from "./task-mailbox.js";
import { createTaskRecordIo, finishPartitions } from "./task-record-io.js";
import type { TaskCheckpointing, TaskResources } from "./task-resources.js";
import { restoreOutputChannelState, setUpChannelStateWriter } from "./unaligned-channel-state.js";
import type { TaskInvokable } from "./user-code-registry.js";

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
 *
 * Checkpoints (when the job's descriptor names a checkpointing mode): the invokable registers
 * its state with {@link setCheckpointHandler} and starts from {@link restoredState}. A task with
 * inputs needs nothing else: its readers read through a barrier handler of the job's mode, and
 * the snapshot is taken inside the poll that meets the checkpoint's last barrier. A source gets
 * its triggers as mail and runs them where it calls {@link processMail} or
 * {@link yieldToMailbox}, between two records. The barrier then goes to every output, and the
 * snapshot is written and acknowledged in the background.
 *
 * The final checkpoint (FLIP-147, with `execution.checkpointing.checkpoints-after-tasks-finish`):
 * when the invokable returns, the task sends EndOfData on every output and stays RUNNING,
 * running its mail and reading its inputs on to EndOfPartition for the barriers still coming,
 * until a checkpoint it took after that completed and the consumers of its pipelined
 * partitions processed every record before the EndOfData (they acknowledge reading it); only
 * then does it finish its partitions.
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
  /**
   * The leadership of the job manager that deployed this attempt (1 to 32 letters and digits):
   * under high availability derived from the leader's fencing token (etcd's grows with every
   * leadership), else random per deployment. Attempt numbers start at 0 again under a new
   * leader, so whatever a task names outside (part files, transactional ids) must hold this too:
   * `TransactionalFileSink` and any `TwoPhaseCommitSink` do it by themselves.
   */
  readonly leadershipEpoch: string;
  /**
   * The vertex's max parallelism: the number of key groups its keyed state is split into (Flink's
   * `getMaxNumberOfParallelSubtasks`).
   */
  readonly maxParallelism: number;
  /**
   * The key groups this subtask owns (Flink's `KeyGroupRangeAssignment`): the records its HASH
   * input routes to it, and the keyed state it keeps and restores.
   */
  readonly keyGroupRange: KeyGroupRange;
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
  /** The job's checkpointing mode; `undefined` when the job takes no checkpoints. */
  readonly checkpointingMode: CheckpointingMode | undefined;
  /** The checkpoint this attempt was restored from; `undefined` for a fresh start. */
  readonly restoredCheckpointId: bigint | undefined;
  /**
   * What the task's {@link CheckpointHandler} returned for the checkpoint this attempt was
   * restored from; `undefined` for a fresh start (or when it returned nothing). A source seeks
   * to the offset it stored, a counter loads its map.
   */
  readonly restoredState: JsonValue | undefined;
  /**
   * Bytes of in-flight data the restored checkpoint held for this task (input and output channel
   * state of an unaligned checkpoint), replayed before new data; 0 for a fresh start or an
   * aligned checkpoint.
   */
  readonly restoredChannelStateBytes: number;

  private readonly resources: TaskResources;
  private readonly mailbox = new TaskMailbox();
  private barrierHandler: CheckpointBarrierHandler | undefined;
  private aborted: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private currentState: ExecutionState = "INITIALIZING";
  private failure: Error | undefined;
  private recordWriters: RecordWriter<unknown>[] = [];
  private recordReaders: RecordReader<unknown>[] = [];
  /** Stops the buffer debloating timer while it runs. */
  private stopDebloating: (() => void) | undefined;
  private readonly termination = deferred<TaskExecutionState>();
  private released = false;
  /** The checkpoint notifications to the task code's listener, in order. */
  private readonly notifications: CheckpointNotifications;
  /**
   * True once the invokable returned (its input ended or it emitted everything) and, with final
   * checkpoints, EndOfData went to every output.
   */
  private endOfInput = false;
  /** The first checkpoint this task performed after {@link endOfInput}: its final state. */
  private finalCheckpointId: bigint | undefined;
  /**
   * How a stop-with-savepoint asked this source to stop (Flink's `FinishingReason`
   * STOP_WITH_SAVEPOINT_DRAIN / _NO_DRAIN), once its trigger ran.
   */
  private stopRequest: StopMode | undefined;
  /**
   * The savepoint of the stop-with-savepoint that stopped this source, performed once its code
   * returned and its EndOfData went out (the barrier follows the EndOfData, as in Flink).
   */
  private stopSavepoint:
    | {
        readonly id: bigint;
        readonly timestamp: bigint;
        readonly trigger: CheckpointTriggerOptions;
      }
    | undefined;
  /**
   * The synchronous savepoint (stop-with-savepoint) this task took part in (Flink's
   * `syncSavepoint`): it finishes only once that savepoint completed, and fails when it is
   * aborted.
   */
  private syncSavepointId: bigint | undefined;

  constructor(resources: TaskResources) {
    const { descriptor } = resources;
    this.resources = resources;
    this.jobId = descriptor.jobId;
    this.executionAttemptId = descriptor.executionAttemptId;
    this.taskName = descriptor.taskName;
    this.name = taskNameWithSubtask(descriptor);
    this.notifications = new CheckpointNotifications({
      name: this.name,
      isFailed: () => this.failure !== undefined,
      fail: (cause) => this.fail(cause),
    });
    this.subtaskIndex = descriptor.executionAttemptId.subtaskIndex;
    this.attemptNumber = descriptor.executionAttemptId.attemptNumber;
    this.leadershipEpoch = descriptor.leadershipEpoch ?? NO_LEADERSHIP_EPOCH;
    this.numberOfSubtasks = descriptor.numberOfSubtasks;
    this.maxParallelism =
      descriptor.maxParallelism ?? computeDefaultMaxParallelism(descriptor.numberOfSubtasks);
    this.keyGroupRange = computeKeyGroupRangeForOperatorIndex(
      this.maxParallelism,
      this.numberOfSubtasks,
      this.subtaskIndex,
    );
    this.configuration = descriptor.taskConfiguration;
    this.partitions = Object.freeze(resources.outputs.map((output) => output.partition));
    this.gates = Object.freeze(resources.inputs.map((input) => input.gate));
    this.metricGroup = resources.metricGroup;
    this.terminated = this.termination.promise;
    const consumed = this.partitions.map(
      (partition) => partition.getReleaseFuture?.() ?? this.terminated.then(() => undefined),
    );
    this.partitionsConsumed = Promise.all(consumed).then(() => undefined);
    this.checkpointingMode = resources.checkpointing?.mode;
    this.restoredCheckpointId = resources.restore?.checkpointId;
    this.restoredState = resources.restore?.state;
    this.restoredChannelStateBytes = channelStateSize(
      resources.restore?.channelState ?? EMPTY_CHANNEL_STATE,
    );
    this.report({
      serializers: {
        produced: resources.outputs.map((output) => output.serializer.name),
        consumed: resources.inputs.map((input) => input.serializer.name),
      },
    });
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
   * How the task's data ends when a stop-with-savepoint stops the job (Flink's `StopMode`);
   * `undefined` while nothing asked it to stop and its input has not ended.
   *
   * - A source: `DRAIN` or `NO_DRAIN` once a stop-with-savepoint's trigger ran (in
   *   {@link processMail} or {@link yieldToMailbox}, which then returns at once): its code should
   *   return at its next record boundary. What it emitted until then comes before its
   *   `EndOfData` and the savepoint's barrier, and its offset in the savepoint counts it.
   * - A task with inputs: `NO_DRAIN` once an input delivered `EndOfData(NO_DRAIN)` (a stop
   *   without drain), else `DRAIN` once every input ended.
   *
   * With `NO_DRAIN` the task must emit nothing it would emit at the end of its input (a window's
   * last results, a flushed buffer, Flink's `endInput` and `finish`): what it keeps is in its
   * state, which the savepoint holds, and a job resumed from the savepoint goes on from there.
   * Its `EndOfData` then says `NO_DRAIN` too, so the tasks after it stop the same way.
   */
  get stopMode(): StopMode | undefined {
    if (this.stopRequest !== undefined) return this.stopRequest;
    if (this.recordReaders.length === 0) return undefined;
    let ended = true;
    for (const reader of this.recordReaders) {
      const mode = reader.endOfDataStopMode();
      if (mode === StopMode.NO_DRAIN) return StopMode.NO_DRAIN;
      if (mode === undefined) ended = false;
    }
    return ended ? StopMode.DRAIN : undefined;
  }

  /**
   * The barrier handler of a checkpointing task with inputs, once it runs: its live alignment
   * figures (`getAlignmentDurationNanos()`, `getCheckpointStartDelayNanos()`,
   * `getBytesProcessedDuringAlignment()`) are Flink's `checkpointAlignmentTime` and
   * `checkpointStartDelayNanos` gauges.
   */
  get checkpointBarrierHandler(): CheckpointBarrierHandler | undefined {
    return this.barrierHandler;
  }

  /** The figures of the last checkpoint this task acknowledged (what the job side got). */
  get lastCheckpoint(): TaskCheckpointStats | undefined {
    return this.resources.checkpointing?.coordinator.lastCheckpoint;
  }

  /**
   * Registers how the task's state is snapshotted (see {@link CheckpointHandler}); call it once,
   * at the start of the invokable, after reading {@link restoredState}. Without one, the task
   * acknowledges checkpoints with no state. Ignored when the job takes no checkpoints.
   */
  setCheckpointHandler(handler: CheckpointHandler): void {
    this.resources.checkpointing?.coordinator.setCheckpointHandler(handler);
  }

  /**
   * Registers what the task's code is told when a checkpoint completed or was aborted (see
   * {@link CheckpointListener}); call it once, at the start of the invokable, next to
   * {@link setCheckpointHandler}. Ignored when the job takes no checkpoints.
   *
   * With `execution.checkpointing.checkpoints-after-tasks-finish` (the default), a task does not
   * finish as soon as its invokable returns: it sends EndOfData to its consumers and waits until
   * a checkpoint taken after that point, of its final state, completed and its listener handled
   * the notification (FLIP-147's final checkpoint), so an exactly-once sink commits its last
   * output before the job ends.
   */
  setCheckpointListener(listener: CheckpointListener): void {
    if (this.resources.checkpointing === undefined) return;
    this.notifications.listener = listener;
  }

  /**
   * Checkpoint `checkpointId` completed (Flink's `notifyCheckpointCompleteAsync`); called by the
   * TaskExecutor when the job side says so. The task's {@link CheckpointListener} is told after
   * the notifications before it were handled; a completion no newer than one it was already
   * told of is dropped. Ignored once the task ended.
   *
   * @throws IllegalStateError when the job takes no checkpoints.
   */
  notifyCheckpointComplete(checkpointId: bigint): void {
    this.checkpointingFor("notifyCheckpointComplete", checkpointId);
    if (isTerminal(this.currentState)) return;
    this.notifications.enqueue(checkpointId, "complete");
  }

  /**
   * Checkpoint `checkpointId` was aborted (Flink's `notifyCheckpointAbortAsync`): the task's
   * checkpoint coordinator skips it should its trigger or barriers still come (a cancellation
   * marker goes downstream instead) and cancels its asynchronous part if one runs; the
   * {@link CheckpointListener} is told, in order with the other notifications, after it was
   * told that `latestCompletedCheckpointId` completed, in case that notification was lost.
   * Ignored once the task ended.
   *
   * @param latestCompletedCheckpointId the newest checkpoint the job completed (0: none).
   * @throws IllegalStateError when the job takes no checkpoints.
   */
  notifyCheckpointAborted(checkpointId: bigint, latestCompletedCheckpointId = 0n): void {
    const checkpointing = this.checkpointingFor("notifyCheckpointAborted", checkpointId);
    if (isTerminal(this.currentState)) return;
    if (latestCompletedCheckpointId > 0n) {
      this.notifications.enqueue(latestCompletedCheckpointId, "complete");
    }
    checkpointing.coordinator.notifyCheckpointAborted(checkpointId);
    this.notifications.enqueue(checkpointId, "abort");
    if (checkpointId === this.syncSavepointId || checkpointId === this.stopSavepoint?.id) {
      // Its data ended for a stop that will not complete: it cannot go on (Flink fails the task
      // with "Stop-with-savepoint failed"), and the job fails over to its latest checkpoint.
      this.fail(
        new CheckpointError(
          `${this.name}: stop-with-savepoint failed: its savepoint ${checkpointId} was aborted`,
        ),
      );
    }
  }

  /**
   * Completed checkpoint `checkpointId` was subsumed: a newer one completed and the job side
   * no longer retains it (Flink's `notifyCheckpointSubsumedAsync`, sent with the newer one's
   * completion). The task's {@link CheckpointListener} is told, in order. Ignored once the task
   * ended.
   *
   * @throws IllegalStateError when the job takes no checkpoints.
   */
  notifyCheckpointSubsumed(checkpointId: bigint): void {
    this.checkpointingFor("notifyCheckpointSubsumed", checkpointId);
    if (isTerminal(this.currentState)) return;
    this.notifications.enqueue(checkpointId, "subsume");
  }

  /** The task's checkpointing, for notification `what` of `checkpointId`. */
  private checkpointingFor(what: string, checkpointId: bigint): TaskCheckpointing {
    const checkpointing = this.resources.checkpointing;
    if (checkpointing === undefined) {
      throw new IllegalStateError(
        `${this.name}: cannot ${what} ${checkpointId}: the job takes no checkpoints`,
      );
    }
    return checkpointing;
  }

  /**
   * Runs the task's queued mail (checkpoint triggers of a source) now, synchronously. Call it
   * only between records, where the task's state reflects exactly the records emitted so far.
   * Mail waits while an output has a record waiting for buffers (half written), as Flink's
   * mailbox runs no checkpoint inside an emit; {@link yieldToMailbox} waits for it. A merely
   * back-pressured output does not hold mail up: events need no buffers, and an unaligned
   * barrier overtakes the queue.
   */
  processMail(): void {
    if (!this.mailbox.hasMail() || anyPendingRecord(this.partitions)) return;
    this.mailbox.runAll();
  }

  /**
   * Lets the event loop run (so triggers from the job side arrive) and runs the task's mail,
   * until `until` resolves — by default for one turn of the event loop — or a
   * stop-with-savepoint asked the source to stop ({@link stopMode}). A source loop calls it
   * between records: every few hundred records, and with `writer.getAvailableFuture()` when
   * back-pressured, so checkpoints are not held up while it waits.
   *
   * ```ts
   * if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
   * else if (i % 256 === 0) await task.yieldToMailbox();
   * ```
   *
   * @throws the cancellation's cause (a CancelledError) once the task is canceled or fails from
   *   outside, so the source stops; and whatever `until` rejects with.
   */
  async yieldToMailbox(until?: Promise<unknown>): Promise<void> {
    this.processMail();
    if (this.stopRequest !== undefined) return;
    let done = false;
    const target = (until ?? new Promise((resolve) => setImmediate(resolve))).then(() => {
      done = true;
    });
    while (!done) {
      const waits: Promise<unknown>[] = [target, this.mailbox.mailArrived(), this.whenAborted()];
      if (this.mailbox.hasMail() && anyPendingRecord(this.partitions)) {
        waits.push(outputsAvailableFuture(this.partitions));
      }
      await Promise.race(waits);
      // A canceled task stops here rather than wait for `until`, which may never come.
      if (this.signal.aborted) throw this.signal.reason;
      this.processMail();
      // A stopped source returns at once: it should end rather than wait to emit more.
      if (this.stopRequest !== undefined) return;
    }
  }

  /** Resolves once {@link signal} aborts (one listener for the task's life). */
  private whenAborted(): Promise<void> {
    this.aborted ??= new Promise((resolve) => {
      if (this.signal.aborted) resolve();
      else this.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    return this.aborted;
  }

  /**
   * Queues checkpoint `checkpointId` (created at `timestamp`, ms since the epoch) for the task's
   * code to run as mail (Flink's `triggerCheckpointAsync`); called by the TaskExecutor when the
   * job side triggers a checkpoint at this source, or (with
   * `execution.checkpointing.checkpoints-after-tasks-finish`) at a task whose producers all
   * finished: that task runs it once its input ended. A task that is not running declines it.
   *
   * @throws IllegalStateError when the job takes no checkpoints, or the task has inputs and
   *   checkpoints do not go on after tasks finish (tasks with inputs checkpoint when their
   *   barriers align).
   */
  triggerCheckpoint(
    checkpointId: bigint,
    timestamp: bigint,
    trigger: CheckpointTriggerOptions = CHECKPOINT_TRIGGER,
  ): void {
    const checkpointing = this.resources.checkpointing;
    if (checkpointing === undefined) {
      throw new IllegalStateError(
        `${this.name}: cannot trigger checkpoint ${checkpointId}: the job takes no checkpoints`,
      );
    }
    if (this.gates.length > 0 && this.resources.descriptor.checkpointsAfterTasksFinish !== true) {
      throw new IllegalStateError(
        `${this.name}: cannot trigger checkpoint ${checkpointId}: only sources are triggered; a task with inputs checkpoints when the barriers of its inputs align`,
      );
    }
    const coordinator = checkpointing.coordinator;
    if (this.currentState !== "RUNNING") {
      const reason =
        this.currentState === "INITIALIZING" || this.currentState === "DEPLOYING"
          ? CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_NOT_READY
          : CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_CLOSING;
      coordinator.decline(checkpointId, reason);
      return;
    }
    const stopping = isSynchronousSavepoint(trigger.snapshotType);
    this.mailbox.put({
      run: () => {
        if (stopping && this.gates.length === 0 && !this.endOfInput) {
          // Flink's stop-with-savepoint at a source: the source stops first; its savepoint is
          // taken once its code returned and its EndOfData went out (see endData).
          this.stopRequest = stopModeOf(trigger.snapshotType);
          this.stopSavepoint = { id: checkpointId, timestamp, trigger };
          return;
        }
        coordinator.triggerCheckpoint(checkpointId, timestamp, trigger);
      },
      drop: () =>
        coordinator.decline(checkpointId, CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_CLOSING),
    });
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
    const recordIo = createTaskRecordIo(this.name, this.resources, this.partitions, this.gates);
    this.recordWriters = recordIo.recordWriters;
    this.recordReaders = recordIo.recordReaders;
    this.barrierHandler = recordIo.barrierHandler;
    this.metricGroup.io.markTaskStart();
    this.transition("RUNNING");
    this.stopDebloating = startBufferDebloating(this.gates, this.resources.bufferDebloatPeriodMs);
    let result: JsonValue | undefined;
    try {
      const coordinator = this.resources.checkpointing?.coordinator;
      if (coordinator !== undefined) {
        // Triggered at a source, or on the barriers of its inputs: the first one after the end of
        // data holds the task's final state.
        coordinator.onCheckpointPerformed = (checkpointId, snapshotType) => {
          if (isSynchronousSavepoint(snapshotType)) this.setSynchronousSavepoint(checkpointId);
          if (this.endOfInput) this.finalCheckpointId ??= checkpointId;
        };
      }
      if (coordinator?.unalignedCheckpointsEnabled === true) {
        setUpChannelStateWriter(
          this.name,
          this.partitions,
          this.gates,
          coordinator.channelStateWriter,
        );
        if (this.finalCheckpointEnabled) {
          checkAllRecordsProcessedHandshake(
            this.name,
            this.partitions,
            this.gates,
            this.resources.descriptor,
          );
        }
      }
      await restoreOutputChannelState(
        this.name,
        this.partitions,
        this.resources.restore?.channelState ?? EMPTY_CHANNEL_STATE,
        () => this.checkNotAborted(),
      );
      // A subtask that had finished before the restored checkpoint does not run again (FLIP-147).
      if (this.resources.restore?.finished !== true) {
        result = (await startTask(this, () => invokable(this))) ?? undefined;
      }
      this.checkNotAborted();
      await this.endData();
      await this.waitForFinalCheckpoint();
      this.checkNotAborted();
      await this.runRemainingMail();
      this.checkNotAborted();
      await finishPartitions(this.recordWriters, this.partitions, this.metricGroup.io, () =>
        this.checkNotAborted(),
      );
      this.checkNotAborted();
    } catch (error) {
      this.failure ??= asError(error);
      const cause = this.failure;
      this.mailbox.close();
      this.resources.checkpointing?.coordinator.discardPendingCheckpoints();
      await this.releaseResources(cause);
      await this.resources.checkpointing?.coordinator.waitForPendingCheckpoints();
      await this.notifications.settled();
      this.terminate(this.state === "CANCELING" ? "CANCELED" : "FAILED", cause);
      throw cause;
    }
    await this.closeInputs();
    this.released = true;
    this.resources.checkpointing?.coordinator.closeChannelState();
    // The job side learns of every checkpoint this task took part in before it learns that the
    // task finished, so it can abort the checkpoints a finished task will never acknowledge.
    await this.resources.checkpointing?.coordinator.waitForPendingCheckpoints();
    await this.notifications.settled();
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

  /**
   * @internal Gives up on a task canceled or failed from outside whose code has not returned (an embedded
   * TaskExecutor's answer to `task.cancellation.timeout`, where no process can be ended): it ends
   * now, CANCELED or FAILED as it was stopped, its partitions and gates released when it was
   * stopped; what its code does afterwards changes nothing. No-op otherwise.
   */
  abandon(): void {
    const cause = this.failure;
    if (cause === undefined || isTerminal(this.currentState)) return;
    const next = this.currentState === "CANCELING" ? "CANCELED" : "FAILED";
    void this.releaseResources(cause).then(() => this.terminate(next, cause));
  }

  private stop(next: "CANCELING" | "FAILED", cause: Error): void {
    if (isTerminal(this.currentState) || this.currentState === "CANCELING") return;
    if (this.failure !== undefined) return;
    this.failure = cause;
    const wasRunning = this.currentState === "RUNNING";
    if (next === "CANCELING") this.transition("CANCELING");
    this.mailbox.close();
    this.resources.checkpointing?.coordinator.discardPendingCheckpoints();
    this.abort.abort(cause);
    const released = this.releaseResources(cause);
    if (!wasRunning) {
      // Nothing runs the task's code: end it here.
      void released.then(() => this.terminate(next === "CANCELING" ? "CANCELED" : "FAILED", cause));
    }
  }

  /**
   * Whether the task waits for a final checkpoint when its invokable returned (FLIP-147): only
   * in a checkpointing job with `execution.checkpointing.checkpoints-after-tasks-finish`, so a job
   * without checkpoints ends as soon as its code returns.
   */
  private get finalCheckpointEnabled(): boolean {
    return (
      this.resources.checkpointing !== undefined &&
      this.resources.descriptor.checkpointsAfterTasksFinish === true
    );
  }

  /**
   * The invokable returned (Flink's `endData`): with final checkpoints, EndOfData goes to every
   * output first, ahead of the barrier of the final checkpoint, so each consumer learns that no
   * record follows while the channel stays open for that barrier. It says `NO_DRAIN` when a
   * stop-with-savepoint without drain stopped this source or reached it through an input
   * ({@link stopMode}), else `DRAIN`. A source stopped by a stop-with-savepoint then takes the
   * savepoint, its barrier behind the EndOfData (Flink's source task triggers it once the
   * source finished).
   */
  private async endData(): Promise<void> {
    if (this.finalCheckpointEnabled) {
      // An event cannot follow a record that is still waiting for buffers.
      while (anyPendingRecord(this.partitions)) {
        await outputsAvailableFuture(this.partitions);
        this.checkNotAborted();
      }
      const endOfData = new EndOfData(this.stopMode ?? StopMode.DRAIN);
      for (const writer of this.recordWriters) writer.broadcastEvent(endOfData);
    }
    this.endOfInput = true;
    const savepoint = this.stopSavepoint;
    if (savepoint !== undefined) {
      this.resources.checkpointing?.coordinator.triggerCheckpoint(
        savepoint.id,
        savepoint.timestamp,
        savepoint.trigger,
      );
    }
  }

  /**
   * This task performed the synchronous savepoint of a stop-with-savepoint (Flink's
   * `setSynchronousSavepoint`): it finishes once that savepoint completed, not on its own final
   * checkpoint. At most one at a time.
   */
  private setSynchronousSavepoint(checkpointId: bigint): void {
    if (this.syncSavepointId !== undefined && this.syncSavepointId !== checkpointId) {
      this.fail(
        new IllegalStateError(
          `${this.name}: at most one stop-with-savepoint at a time: savepoint ${checkpointId} came while ${this.syncSavepointId} is pending`,
        ),
      );
      return;
    }
    this.syncSavepointId = checkpointId;
  }

  /**
   * FLIP-147's final checkpoint: a task whose invokable returned keeps running its mail (the
   * triggers a source gets) and reading its inputs to EndOfPartition (the barriers of the
   * checkpoints its producers wait for) until every input ended and a checkpoint it took since
   * then completed and its listener handled that: what it prepared for its final state is committed before it finishes,
   * and its consumers, reached by that checkpoint's barrier, take part in it. It also waits,
   * in any order, until the consumers of its pipelined partitions processed every record (Flink's
   * StreamTask waits for both): an unaligned barrier overtakes the EndOfData, so the final
   * checkpoint may complete while a consumer still drains the records before it, and a task
   * finished then would be recorded as finished by the next checkpoint, its records only in the
   * consumer's queue. Meanwhile it stays RUNNING and is triggered like a source. A subtask
   * restored as finished does not wait: the restored checkpoint holds its final state, and its
   * consumers hold none of its records.
   */
  private async waitForFinalCheckpoint(): Promise<void> {
    if (!this.finalCheckpointEnabled || this.resources.restore?.finished === true) return;
    let processed = false;
    let processedFailure: unknown;
    const allProcessed = allDataProcessed(this.partitions, this.resources.descriptor).then(
      () => {
        processed = true;
      },
      (error: unknown) => {
        processedFailure = error;
      },
    );
    for (;;) {
      this.processMail();
      const open = this.recordReaders.filter((reader) => !reader.pollToEndOfPartition());
      if (processedFailure !== undefined) throw processedFailure;
      // A stop-with-savepoint's task waits for that savepoint, a later checkpoint does not do.
      const final = this.syncSavepointId ?? this.finalCheckpointId;
      // And every input ended (EndOfPartition): a task that finished before its producers did
      // would release their subpartitions under them (Flink's task ends its input first).
      if (
        processed &&
        open.length === 0 &&
        final !== undefined &&
        this.notifications.lastCompletedCheckpointId >= final
      ) {
        return;
      }
      const waits: Promise<unknown>[] = [
        // Once settled it would end every wait at once: the loop would never yield.
        ...(processed ? [] : [allProcessed]),
        this.mailbox.mailArrived(),
        this.notifications.nextHandled(),
        this.whenAborted(),
        ...open.map((reader) => reader.getAvailableFuture()),
      ];
      if (this.mailbox.hasMail() && anyPendingRecord(this.partitions)) {
        waits.push(outputsAvailableFuture(this.partitions));
      }
      await Promise.race(waits);
      this.checkNotAborted();
    }
  }

  /**
   * The invokable returned: triggers that arrived since it last ran its mail still get their
   * barrier before EndOfPartition (the task's final state is consistent), later ones are declined.
   */
  private async runRemainingMail(): Promise<void> {
    if (this.resources.checkpointing !== undefined) {
      while (this.mailbox.hasMail()) {
        if (anyPendingRecord(this.partitions)) await outputsAvailableFuture(this.partitions);
        this.checkNotAborted();
        this.processMail();
      }
    }
    this.mailbox.close();
  }

  private async closeInputs(): Promise<void> {
    this.stopDebloating?.();
    this.stopDebloating = undefined;
    this.barrierHandler?.close();
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
    if (isTerminal(this.currentState)) return;
    this.currentState = state;
    const update = this.report({
      ...(cause === undefined ? {} : { error: serializeThrowable(cause) }),
      ...(result === undefined ? {} : { result }),
    });
    this.termination.resolve(update);
  }

  private report(
    extra: Pick<TaskExecutionState, "error" | "result" | "serializers">,
  ): TaskExecutionState {
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

/** The stop mode of a stop-with-savepoint's savepoint type (Flink's `shouldDrain`). */
function stopModeOf(type: SnapshotType): StopMode {
  return type === SnapshotType.SAVEPOINT_TERMINATE ? StopMode.DRAIN : StopMode.NO_DRAIN;
}
