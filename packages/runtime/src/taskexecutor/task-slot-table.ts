import {
  deferred,
  type ExecutionAttemptID,
  IllegalStateError,
  IntermediateDataSetID,
  JobID,
  PartitionNotFoundError,
  ResultPartitionID,
  type SharedNetworkMemory,
} from "@sluice/core";
import {
  type ExecutionState,
  type JsonValue,
  type PartitionInfo,
  PartitionInfoCodec,
  type SubpartitionRequest,
} from "@sluice/runtime-api";
import { AcknowledgeCheckpointCodec } from "../messages/acknowledge-checkpoint.js";
import {
  type CheckpointTriggerOptions,
  CheckpointTriggerOptionsCodec,
} from "../messages/checkpoint-trigger-options.js";
import { DeclineCheckpointCodec } from "../messages/decline-checkpoint.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import {
  deserializeThrowable,
  type SerializedThrowable,
  serializeThrowable,
} from "../messages/serialized-throwable.js";
import {
  type TaskDeploymentDescriptor,
  TaskDeploymentDescriptorCodec,
  taskNameWithSubtask,
} from "../messages/task-deployment-descriptor.js";
import {
  isTerminal,
  type TaskExecutionState,
  taskExecutionStateFromJSON,
} from "../messages/task-execution-state.js";
import type { MetricDump } from "../metrics/metric-dump.js";
import { TaskNotFoundError, TaskSlotThreadError } from "./errors.js";
import type { RunningTask } from "./running-task.js";
import type { FromSlotThread, SlotRequest, TaskSlotThreadInit } from "./task-slot-messages.js";
import { TaskSlotThread } from "./task-slot-thread.js";

/** The answer for a producer when nobody can say: keep asking (see TaskExecutor). */
const ASSUME_RUNNING: ExecutionState = "RUNNING";

/** A task deployed to a slot thread, as the main thread sees it. */
class SlotTask implements RunningTask {
  readonly jobId: JobID;
  readonly executionAttemptId: ExecutionAttemptID;
  readonly name: string;
  readonly terminated: Promise<TaskExecutionState>;
  private readonly termination = deferred<TaskExecutionState>();
  state: ExecutionState = "DEPLOYING";

  constructor(
    tdd: TaskDeploymentDescriptor,
    readonly slotIndex: number,
    readonly jobMaster: JobMasterGateway,
  ) {
    this.jobId = tdd.jobId;
    this.executionAttemptId = tdd.executionAttemptId;
    this.name = taskNameWithSubtask(tdd);
    this.terminated = this.termination.promise;
  }

  /** Takes a state report of the task; true when it was its last. */
  report(update: TaskExecutionState): boolean {
    this.state = update.state;
    if (!isTerminal(update.state)) return false;
    this.termination.resolve(update);
    return true;
  }
}

/** Starts slot `slot`: on the main thread when it is slot 0 and the options say so. */
function startSlot(
  options: TaskSlotTableOptions,
  slot: number,
  onMessage: (thread: TaskSlotThread, message: FromSlotThread) => void,
): Promise<TaskSlotThread> {
  return TaskSlotThread.start(
    options.init(slot),
    onMessage,
    slot === 0 && options.mainThreadSlot === true,
  );
}

/** A subpartition request waiting for its producer to be deployed on one of the slots. */
interface ProducerWaiter {
  readonly deployed: (slot: number) => void;
}

/** What the table is started with. */
export interface TaskSlotTableOptions {
  readonly numberOfSlots: number;
  /** What slot thread `slotIndex` is started with. */
  readonly init: (slotIndex: number) => TaskSlotThreadInit;
  /**
   * Slot 0 runs on the main thread, the others on threads of their own
   * (`taskmanager.task-slots.main-thread-slot`). Default false.
   */
  readonly mainThreadSlot?: boolean;
  /** The main thread's view of the shared network memory (it takes back a dead thread's). */
  readonly memory: SharedNetworkMemory;
  /** A slot thread died, or its replacement could not start (default: `process.emitWarning`). */
  readonly warn?: (message: string) => void;
  /** A slot's thread ended: the main thread's environment gives up what it shared with it. */
  readonly onThreadLost?: (threadIndex: number, cause: Error) => void;
  /** A slot's TaskExecutor reported a fatal error (see `TaskExecutorOptions.onFatalError`). */
  readonly onFatalError?: (error: Error) => void;
}

/**
 * The slots of a task manager that runs them on worker threads (Flink's TaskSlotTable: which
 * task runs in which slot), from its main thread: it starts a thread per slot, places each task
 * on a slot, hands the job side's calls to the slot that runs the task, passes the tasks' reports
 * to their job masters, and routes the requests of one thread for a partition another produces.
 *
 * A task goes to the slot that runs the fewest subtasks of its vertex, then the fewest tasks, as
 * Flink's slot sharing puts one subtask of each vertex into a slot. When a slot's thread dies,
 * its tasks fail with the error that killed it, its memory is taken back, the other threads give
 * up what they shared with it, and a new thread takes the slot: the task manager goes on. With
 * `mainThreadSlot`, slot 0 runs on the main thread through the same handle: when its own code
 * fails it (see `TaskSlotThread`), the same happens, and a new slot 0 starts on the main thread.
 */
export class TaskSlotTable {
  private readonly options: TaskSlotTableOptions;
  private readonly memory: SharedNetworkMemory;
  /** Each slot's thread, or the start of its next one. */
  private readonly slots: (TaskSlotThread | Promise<TaskSlotThread>)[];
  private readonly tasks = new Map<string, SlotTask>();
  /** Which slot runs (or ran) a producer attempt, while its partitions may be there. */
  private readonly producerSlots = new Map<string, number>();
  private readonly producerWaiters = new Map<string, Set<ProducerWaiter>>();
  /** The partitions each slot reported last. */
  private readonly slotPartitions: (readonly string[])[];
  private readonly warn: (message: string) => void;
  private closing = false;

  private constructor(options: TaskSlotTableOptions, threads: TaskSlotThread[]) {
    this.options = options;
    this.memory = options.memory;
    this.slots = threads;
    this.slotPartitions = threads.map(() => []);
    this.warn =
      options.warn ?? ((message) => process.emitWarning(message, "SluiceTaskSlotWarning"));
    for (const thread of threads) this.watch(thread);
  }

  /**
   * Starts a thread per slot and resolves once each runs its TaskExecutor.
   *
   * @throws TaskSlotThreadError naming the slot, with its start-up error as the cause; the
   *   threads that did start are ended again.
   */
  static async start(options: TaskSlotTableOptions): Promise<TaskSlotTable> {
    let table: TaskSlotTable | undefined;
    const early: [TaskSlotThread, FromSlotThread][] = [];
    const onMessage = (thread: TaskSlotThread, message: FromSlotThread) => {
      if (table === undefined) early.push([thread, message]);
      else table.onMessage(thread, message);
    };
    const starts = Array.from({ length: options.numberOfSlots }, (_, slot) =>
      startSlot(options, slot, onMessage),
    );
    const settled = await Promise.allSettled(starts);
    const failed = settled.findIndex((result) => result.status === "rejected");
    if (failed >= 0) {
      await Promise.all(
        settled.map((result) =>
          result.status === "fulfilled" ? result.value.terminate() : undefined,
        ),
      );
      const cause = (settled[failed] as PromiseRejectedResult).reason;
      throw new TaskSlotThreadError(
        `the thread of slot ${failed} could not start: ${(cause as Error)?.message ?? String(cause)}`,
        { cause },
      );
    }
    table = new TaskSlotTable(
      options,
      settled.map((result) => (result as PromiseFulfilledResult<TaskSlotThread>).value),
    );
    for (const [thread, message] of early) table.onMessage(thread, message);
    return table;
  }

  get numberOfSlots(): number {
    return this.slots.length;
  }

  /** The tasks deployed to the slots that have not ended. */
  get runningTasks(): readonly RunningTask[] {
    return [...this.tasks.values()];
  }

  /** The partitions the slots hold (as they last reported). */
  partitions(): ResultPartitionID[] {
    return this.slotPartitions.flat().map((id) => ResultPartitionID.parse(id));
  }

  /**
   * Sends thread `fromThread`'s request for a subpartition to the slot that runs its producer
   * (the main thread's data server asks as thread 0); resolves with that slot's answer.
   */
  requestSubpartition(request: SubpartitionRequest, fromThread: number): Promise<unknown> {
    return this.routeSubpartitionRequest(request, fromThread);
  }

  // ---------------------------------------------------------------------------- gateway calls

  /** Places `tdd`'s task on a slot and deploys it there; reports go to `jobMaster`. */
  async submitTask(tdd: TaskDeploymentDescriptor, jobMaster: JobMasterGateway): Promise<void> {
    this.checkOpen();
    const key = tdd.executionAttemptId.toString();
    if (this.tasks.has(key)) {
      throw new IllegalStateError(
        `${taskNameWithSubtask(tdd)}: attempt ${key} is already deployed on this TaskExecutor`,
      );
    }
    const slot = this.chooseSlot(tdd.executionAttemptId);
    const task = new SlotTask(tdd, slot, jobMaster);
    this.tasks.set(key, task);
    this.producerSlots.set(key, slot);
    try {
      await (await this.thread(slot)).call({
        method: "submitTask",
        descriptor: TaskDeploymentDescriptorCodec.toJSON(tdd),
        acknowledges:
          jobMaster.acknowledgeCheckpoint !== undefined &&
          jobMaster.declineCheckpoint !== undefined,
      });
    } catch (error) {
      this.tasks.delete(key);
      this.producerSlots.delete(key);
      throw error;
    }
    for (const waiter of this.producerWaiters.get(key) ?? []) waiter.deployed(slot);
    this.producerWaiters.delete(key);
  }

  async cancelTask(attempt: ExecutionAttemptID): Promise<void> {
    await this.callTask(attempt, { method: "cancelTask", attempt: attempt.toString() });
  }

  async updatePartitions(
    attempt: ExecutionAttemptID,
    infos: readonly PartitionInfo[],
  ): Promise<void> {
    await this.callTask(attempt, {
      method: "updatePartitions",
      attempt: attempt.toString(),
      infos: infos.map((info) => PartitionInfoCodec.toJSON(info)),
    });
  }

  /** Passes a checkpoint's trigger, completion or abort to the slot that runs the task. */
  async checkpointCall(
    method: "triggerCheckpoint" | "notifyCheckpointComplete" | "notifyCheckpointAborted",
    attempt: ExecutionAttemptID,
    checkpointId: bigint,
    other: bigint,
    lastSubsumed?: bigint,
    trigger?: CheckpointTriggerOptions,
  ): Promise<void> {
    await this.callTask(attempt, {
      method,
      attempt: attempt.toString(),
      checkpointId: checkpointId.toString(),
      other: other.toString(),
      ...(lastSubsumed === undefined ? {} : { lastSubsumed: lastSubsumed.toString() }),
      ...CheckpointTriggerOptionsCodec.toJSON(trigger),
    });
  }

  /**
   * Every slot releases these partitions of its own, and stops tracking them
   * (`TaskExecutor.releasePartitions`), or only frees them (`releasePartitionsLocally`).
   */
  async releasePartitions(ids: readonly ResultPartitionID[], locally = false): Promise<void> {
    await this.everySlot({
      method: locally ? "releasePartitionsLocally" : "releasePartitions",
      ids: ids.map((id) => id.toString()),
    });
  }

  /** Every slot releases what it holds of job `jobId`; resolves with their ids. */
  async releaseJobPartitions(jobId: JobID): Promise<ResultPartitionID[]> {
    const released = await this.everySlot({
      method: "releaseJobPartitions",
      jobId: jobId.toString(),
    });
    return released.flatMap((ids) => (ids as string[]).map((id) => ResultPartitionID.parse(id)));
  }

  /**
   * Delivers a job message to every slot that runs a task of `jobId` (each thread has its own
   * instance of the job's code); resolves with the first reply that is not null, in slot order.
   *
   * @throws IllegalStateError when no slot runs a task of the job; a handler's error.
   */
  async deliverJobMessage(jobId: JobID, name: string, payload: JsonValue): Promise<JsonValue> {
    const slots = new Set<number>();
    for (const task of this.tasks.values()) {
      if (task.jobId.equals(jobId)) slots.add(task.slotIndex);
    }
    if (slots.size === 0) {
      throw new IllegalStateError(
        `no task of job ${jobId} runs on this TaskExecutor's slots: it cannot take the job's message "${name}"`,
      );
    }
    const replies = await Promise.allSettled(
      [...slots]
        .sort((a, b) => a - b)
        .map(async (slot) =>
          (await this.thread(slot)).call({
            method: "deliverJobMessage",
            jobId: jobId.toString(),
            name,
            payload,
          }),
        ),
    );
    // A slot whose task of the job ended meanwhile refuses; the others answer.
    const answered = replies.filter((reply) => reply.status === "fulfilled");
    if (answered.length === 0) throw (replies[0] as PromiseRejectedResult).reason;
    return (answered.map((reply) => reply.value).find((value) => value !== null) ??
      null) as JsonValue;
  }

  /** Every metric of every slot's registry. */
  async dumpMetrics(): Promise<MetricDump[]> {
    const dumps = await this.everySlot({ method: "dumpMetrics" });
    return dumps.flat() as MetricDump[];
  }

  /**
   * Cancels every task, waits for them (up to `cancellationTimeoutMs`, 0 without bound), closes
   * every slot's TaskExecutor and ends the threads. Each thread that ends gives its memory back
   * and the others give up what they shared with it.
   */
  async close(cancellationTimeoutMs: number): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const tasks = [...this.tasks.values()];
    await Promise.all(
      tasks.map((task) =>
        this.callTask(task.executionAttemptId, {
          method: "cancelTask",
          attempt: task.executionAttemptId.toString(),
        }).catch(() => undefined),
      ),
    );
    const ended = Promise.all(tasks.map((task) => task.terminated));
    if (cancellationTimeoutMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        ended,
        new Promise((resolve) => {
          timer = setTimeout(resolve, cancellationTimeoutMs);
        }),
      ]);
      clearTimeout(timer);
    } else {
      await ended;
    }
    // A slot whose new thread could not start has nothing to close.
    const threads = (
      await Promise.all(this.slots.map((slot) => Promise.resolve(slot).catch(() => undefined)))
    ).filter((thread): thread is TaskSlotThread => thread !== undefined);
    await Promise.all(
      threads.map((thread) => thread.call({ method: "close" }).catch(() => undefined)),
    );
    for (const thread of threads) {
      await thread.terminate();
      this.threadGone(thread, new TaskSlotThreadError(`slot ${thread.slotIndex} was closed`));
    }
  }

  // ------------------------------------------------------------------------------- internals

  private checkOpen(): void {
    if (this.closing) throw new IllegalStateError("the TaskExecutor's slots are shutting down");
  }

  /** The slot with the fewest subtasks of the attempt's vertex, then the fewest tasks. */
  private chooseSlot(attempt: ExecutionAttemptID): number {
    const ofVertex = new Array<number>(this.slots.length).fill(0);
    const all = new Array<number>(this.slots.length).fill(0);
    for (const task of this.tasks.values()) {
      all[task.slotIndex] = (all[task.slotIndex] as number) + 1;
      if (task.executionAttemptId.jobVertexId.equals(attempt.jobVertexId)) {
        ofVertex[task.slotIndex] = (ofVertex[task.slotIndex] as number) + 1;
      }
    }
    let best = 0;
    for (let slot = 1; slot < this.slots.length; slot++) {
      const v = ofVertex[slot] as number;
      const b = ofVertex[best] as number;
      if (v < b || (v === b && (all[slot] as number) < (all[best] as number))) best = slot;
    }
    return best;
  }

  private thread(slot: number): Promise<TaskSlotThread> {
    return Promise.resolve(this.slots[slot] as TaskSlotThread | Promise<TaskSlotThread>);
  }

  private async callTask(
    attempt: ExecutionAttemptID,
    call: Parameters<TaskSlotThread["call"]>[0],
  ): Promise<unknown> {
    const task = this.tasks.get(attempt.toString());
    if (task === undefined) {
      throw new TaskNotFoundError(
        `no task with execution attempt ${attempt} runs in this TaskExecutor's slots`,
      );
    }
    return (await this.thread(task.slotIndex)).call(call);
  }

  private async everySlot(call: Parameters<TaskSlotThread["call"]>[0]): Promise<unknown[]> {
    return Promise.all(this.slots.map(async (_, slot) => (await this.thread(slot)).call(call)));
  }

  private onMessage(thread: TaskSlotThread, message: FromSlotThread): void {
    switch (message.kind) {
      case "state":
        this.onState(taskExecutionStateFromJSON(message.update));
        return;
      case "acknowledge": {
        const ack = AcknowledgeCheckpointCodec.fromJSON(message.ack);
        this.tasks.get(ack.executionAttemptId.toString())?.jobMaster.acknowledgeCheckpoint?.(ack);
        return;
      }
      case "decline": {
        const decline = DeclineCheckpointCodec.fromJSON(message.decline);
        this.tasks
          .get(decline.executionAttemptId.toString())
          ?.jobMaster.declineCheckpoint?.(decline);
        return;
      }
      case "request":
        thread.answer(message.id, this.onRequest(thread, message.request));
        return;
      case "served":
        if (message.ok) this.settleServe(message.id, undefined, message.value);
        else this.settleServe(message.id, message.error, undefined);
        return;
      case "partitions":
        this.slotPartitions[thread.slotIndex] = message.ids;
        this.forgetEndedProducers(thread.slotIndex);
        return;
      case "fatal-error":
        this.options.onFatalError?.(deserializeThrowable(message.error));
        return;
    }
  }

  private onState(update: TaskExecutionState): void {
    const key = update.executionAttemptId.toString();
    const task = this.tasks.get(key);
    if (task === undefined) return;
    task.jobMaster.updateTaskExecutionState(update);
    if (task.report(update)) {
      this.tasks.delete(key);
      this.forgetEndedProducers(task.slotIndex);
    }
  }

  /** Routes for producers that ended and whose slot holds none of their partitions are dropped. */
  private forgetEndedProducers(slot: number): void {
    const held = new Set(
      (this.slotPartitions[slot] ?? []).map((id) =>
        ResultPartitionID.parse(id).producerId.toString(),
      ),
    );
    for (const [attempt, at] of this.producerSlots) {
      if (at === slot && !this.tasks.has(attempt) && !held.has(attempt)) {
        this.producerSlots.delete(attempt);
      }
    }
  }

  private async onRequest(thread: TaskSlotThread, request: SlotRequest): Promise<unknown> {
    if (request.what === "subpartition") {
      return this.routeSubpartitionRequest(request.request, thread.threadIndex);
    }
    const partitionId = ResultPartitionID.parse(request.partitionId);
    const producer = this.tasks.get(partitionId.producerId.toString());
    if (producer !== undefined) return producer.state;
    const asking = this.tasks.get(request.attempt);
    if (asking === undefined) return ASSUME_RUNNING;
    return asking.jobMaster.requestPartitionProducerState(
      JobID.fromHex(request.jobId),
      IntermediateDataSetID.fromHex(request.resultId),
      partitionId,
    );
  }

  // ---------------------------------------------------------------- routing subpartitions

  private readonly serving = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void; slot: number }
  >();
  private nextServe = 0;

  /**
   * Sends a thread's request for a subpartition to the slot that runs its producer, waiting (up
   * to the request's timeout) for the producer to be deployed when it is not yet.
   */
  private async routeSubpartitionRequest(
    request: SubpartitionRequest,
    fromThread: number,
  ): Promise<unknown> {
    const partitionId = ResultPartitionID.parse(request.partitionId);
    const attempt = partitionId.producerId.toString();
    let slot = this.producerSlots.get(attempt);
    if (slot === undefined && request.timeoutMs > 0) {
      slot = await this.waitForProducer(attempt, request.timeoutMs);
    }
    if (slot === undefined) {
      throw new PartitionNotFoundError(
        `result partition ${partitionId} is not produced in any slot of this task manager (yet)`,
        { partitionId },
      );
    }
    if (slot + 1 === fromThread) {
      // The requester's own slot: it reads the partition directly once it registered.
      throw new PartitionNotFoundError(
        `result partition ${partitionId} is not registered in slot ${slot} yet`,
        { partitionId },
      );
    }
    const producer = await this.thread(slot);
    const id = this.nextServe++;
    return new Promise((resolve, reject) => {
      this.serving.set(id, { resolve, reject, slot });
      producer.post({ kind: "serve", id, request });
    });
  }

  private waitForProducer(attempt: string, timeoutMs: number): Promise<number | undefined> {
    return new Promise((resolve) => {
      const waiters = this.producerWaiters.get(attempt) ?? new Set<ProducerWaiter>();
      this.producerWaiters.set(attempt, waiters);
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        if (waiters.size === 0) this.producerWaiters.delete(attempt);
        resolve(undefined);
      }, timeoutMs);
      timer.unref();
      const waiter: ProducerWaiter = {
        deployed: (slot) => {
          clearTimeout(timer);
          resolve(slot);
        },
      };
      waiters.add(waiter);
    });
  }

  private settleServe(id: number, error: SerializedThrowable | undefined, value: unknown): void {
    const pending = this.serving.get(id);
    if (pending === undefined) return;
    this.serving.delete(id);
    if (error === undefined) pending.resolve(value);
    else pending.reject(deserializeThrowable(error));
  }

  // ------------------------------------------------------------------------- a dead thread

  private watch(thread: TaskSlotThread): void {
    void thread.exited.then(({ code, error }) => {
      if (this.closing) return;
      const cause =
        error ??
        new TaskSlotThreadError(
          `the thread of slot ${thread.slotIndex} ended (exit code ${code}) while it ran tasks`,
        );
      this.warn(
        thread.onMainThread
          ? `slot ${thread.slotIndex} on the main thread failed: ${cause.message}; starting it again`
          : `the thread of slot ${thread.slotIndex} died: ${cause.message}; starting a new one`,
      );
      this.threadGone(thread, cause);
      this.restart(thread.slotIndex);
    });
  }

  /**
   * A slot's thread ended: its tasks fail with `cause`, its memory comes back, and the other
   * threads give up the channels and buffers they shared with it.
   */
  private threadGone(thread: TaskSlotThread, cause: Error): void {
    for (const [key, task] of this.tasks) {
      if (task.slotIndex !== thread.slotIndex) continue;
      const update: TaskExecutionState = {
        jobId: task.jobId,
        executionAttemptId: task.executionAttemptId,
        state: "FAILED",
        error: serializeThrowable(cause),
      };
      task.jobMaster.updateTaskExecutionState(update);
      task.report(update);
      this.tasks.delete(key);
    }
    for (const [attempt, slot] of this.producerSlots) {
      if (slot === thread.slotIndex) this.producerSlots.delete(attempt);
    }
    this.slotPartitions[thread.slotIndex] = [];
    for (const [id, pending] of this.serving) {
      if (pending.slot !== thread.slotIndex) continue;
      this.serving.delete(id);
      pending.reject(cause);
    }
    this.memory.reclaimThread(thread.threadIndex);
    const serialized = serializeThrowable(cause);
    for (const other of this.slots) {
      if (other instanceof TaskSlotThread && other !== thread && !other.hasEnded) {
        other.post({ kind: "thread-lost", threadIndex: thread.threadIndex, cause: serialized });
      }
    }
    this.options.onThreadLost?.(thread.threadIndex, cause);
  }

  /** Starts a new thread for `slot`; until it runs, calls for the slot wait for it. */
  private restart(slot: number): void {
    const starting = startSlot(this.options, slot, (thread, message) =>
      this.onMessage(thread, message),
    );
    this.slots[slot] = starting;
    starting.then(
      (thread) => {
        if (this.closing) {
          void thread.terminate();
          return;
        }
        this.slots[slot] = thread;
        this.watch(thread);
      },
      (error: unknown) => {
        this.warn(
          `the thread of slot ${slot} could not be started again: ${(error as Error)?.message ?? String(error)}`,
        );
      },
    );
  }
}
