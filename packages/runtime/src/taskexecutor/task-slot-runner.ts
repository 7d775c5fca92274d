/**
 * One task slot of a task manager whose slots run apart from its main thread
 * (`taskmanager.task-slots.mode: threaded`): one TaskExecutor whose shuffle environment serves
 * the slot over the task manager's shared network memory, driven through a message port. It
 * carries out the main thread's calls on it, reports its tasks' states and checkpoints to the
 * main thread (which passes them to the job masters), and asks the main thread for producer
 * states and for the views of other slots' partitions.
 *
 * A slot thread runs it on its `parentPort` (`task-slot-thread-main.ts`); the slot on the main
 * thread (`taskmanager.task-slots.main-thread-slot`) on one end of a `MessageChannel`, whose
 * other end is the main thread's handle: the same code and the same messages either way.
 */
import type { MessagePort } from "node:worker_threads";
import { ExecutionAttemptID, JobID, ResourceID, ResultPartitionID } from "@sluice/core";
import {
  type ExecutionState,
  MetricOptions,
  PartitionInfoCodec,
  type SubpartitionRequest,
  TaskManagerOptions,
  type TaskSlotThreadsContext,
} from "@sluice/runtime-api";
import { Configuration } from "../config/configuration.js";
import { AcknowledgeCheckpointCodec } from "../messages/acknowledge-checkpoint.js";
import { CheckpointTriggerOptionsCodec } from "../messages/checkpoint-trigger-options.js";
import { DeclineCheckpointCodec } from "../messages/decline-checkpoint.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import { deserializeThrowable, serializeThrowable } from "../messages/serialized-throwable.js";
import { TaskDeploymentDescriptorCodec } from "../messages/task-deployment-descriptor.js";
import { taskExecutionStateToJSON } from "../messages/task-execution-state.js";
import { TaskManagerMetricGroup } from "../metrics/groups/task-manager-metric-group.js";
import { MetricRegistry } from "../metrics/metric-registry.js";
import { ScopeVariables } from "../metrics/scope-format.js";
import { ScopeFormats } from "../metrics/scope-formats.js";
import { asError } from "../util/as-error.js";
import { TaskExecutor } from "./task-executor.js";
import type {
  FromSlotThread,
  SlotCall,
  SlotRequest,
  TaskSlotThreadInit,
  ToSlotThread,
} from "./task-slot-messages.js";

/** How often the slot looks whether the partitions it holds changed (for the main thread). */
const PARTITIONS_REPORT_MS = 50;

/** A slot that runs: what its port's owner ends it with. */
export interface RunningTaskSlot {
  /**
   * Stops reporting, closes the slot's TaskExecutor (its tasks are canceled, its memory goes back)
   * and its metric registry. Idempotent; the port stays open (its owner closes it).
   */
  close(): Promise<void>;
}

/**
 * Runs a task slot on `port`: starts its TaskExecutor from `init`, posts `ready` (or
 * `start-failed`, and rejects) and from then on answers the main thread's messages.
 *
 * @param onSlotError told of an error of the slot's own code outside its tasks (a message it
 *   could not handle, a result it could not post): the slot cannot go on. A slot thread ends with
 *   it; the slot on the main thread fails.
 */
export async function runTaskSlot(
  port: MessagePort,
  init: TaskSlotThreadInit,
  onSlotError: (error: Error) => void,
): Promise<RunningTaskSlot> {
  function post(message: FromSlotThread): void {
    port.postMessage(message);
  }

  // --------------------------------------------------------------------- requests to the main thread

  const answers = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (e: Error) => void }
  >();
  let nextRequest = 0;

  function request(slotRequest: SlotRequest): Promise<unknown> {
    const id = nextRequest++;
    return new Promise((resolve, reject) => {
      answers.set(id, { resolve, reject });
      post({ kind: "request", id, request: slotRequest });
    });
  }

  let serve: ((request: SubpartitionRequest) => Promise<unknown>) | undefined;
  const lostListeners: ((threadIndex: number, cause: Error) => void)[] = [];

  const threads: TaskSlotThreadsContext = {
    role: "slot",
    threadIndex: init.threadIndex,
    sharedMemory: init.sharedMemory,
    signals: init.signals,
    requestSubpartition: (subpartition) => request({ what: "subpartition", request: subpartition }),
    serveSubpartitionRequests: (handler) => {
      serve = handler;
    },
    onThreadLost: (listener) => {
      lostListeners.push(listener);
    },
  };

  /**
   * The job master of one task of this slot, as the main thread forwards it: reports in order on
   * this slot's one port, so an acknowledgement reaches the job side before its task's FINISHED.
   */
  function jobMasterOf(attempt: string, acknowledges: boolean): JobMasterGateway {
    return {
      updateTaskExecutionState: (update) =>
        post({ kind: "state", update: taskExecutionStateToJSON(update) }),
      requestPartitionProducerState: async (jobId, resultId, partitionId) =>
        (await request({
          what: "producer-state",
          attempt,
          jobId: jobId.toString(),
          resultId: resultId.toString(),
          partitionId: partitionId.toString(),
        })) as ExecutionState,
      ...(acknowledges
        ? {
            acknowledgeCheckpoint: (ack) =>
              post({ kind: "acknowledge", ack: AcknowledgeCheckpointCodec.toJSON(ack) }),
            declineCheckpoint: (decline) =>
              post({ kind: "decline", decline: DeclineCheckpointCodec.toJSON(decline) }),
          }
        : {}),
    };
  }

  // ------------------------------------------------------------------------------- the executor

  const configuration = new Configuration(init.configuration, {
    ...(init.configDir === undefined ? {} : { configDir: init.configDir }),
  });
  // Reporters are the main thread's: a slot's metrics are read through it (`dumpMetrics`).
  const registry = new MetricRegistry({
    scopeFormats: ScopeFormats.fromConfiguration(configuration),
    delimiter: configuration.get(MetricOptions.SCOPE_DELIMITER),
  });
  const metricGroup = new TaskManagerMetricGroup(
    registry,
    configuration.get(TaskManagerOptions.HOST),
    init.resourceId,
  );

  let executor: TaskExecutor;
  try {
    executor = await TaskExecutor.startInSlotThread(
      configuration,
      {
        resourceId: ResourceID.fromHex(init.resourceId),
        metricGroup,
        localCommunicationOnly: init.localCommunicationOnly,
        // The task manager's handler decides (on the main thread), as for a task of its own.
        onFatalError: (error) => post({ kind: "fatal-error", error: serializeThrowable(error) }),
        ...(init.loader === undefined ? {} : { loader: init.loader }),
        ...(init.userCodeLoader === undefined ? {} : { userCodeLoader: init.userCodeLoader }),
        ...(init.userCodeModule === undefined ? {} : { userCodeModule: init.userCodeModule }),
      },
      { threads, dataPort: init.dataPort, networkMemoryBytes: init.networkMemoryBytes },
    );
  } catch (error) {
    post({ kind: "start-failed", error: serializeThrowable(error) });
    await registry.close();
    throw error;
  }

  // ---------------------------------------------------------------------- partitions it holds

  let reported = "";
  function reportPartitions(): void {
    const ids = executor.shuffleEnvironment
      .getPartitionsOccupyingLocalResources()
      .map((id) => id.toString())
      .sort();
    const key = ids.join(",");
    if (key === reported) return;
    reported = key;
    post({ kind: "partitions", ids });
  }
  const reporting = setInterval(() => guarded(reportPartitions), PARTITIONS_REPORT_MS);
  reporting.unref();

  /** Runs a step of the slot's own code: what it throws is the slot's error. */
  function guarded(step: () => void): void {
    try {
      step();
    } catch (error) {
      onSlotError(asError(error));
    }
  }

  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    closing ??= (async () => {
      clearInterval(reporting);
      await executor.close();
      await registry.close();
    })();
    return closing;
  }

  // ----------------------------------------------------------------------------------- calls

  async function perform(call: SlotCall): Promise<unknown> {
    switch (call.method) {
      case "submitTask": {
        const tdd = TaskDeploymentDescriptorCodec.fromJSON(call.descriptor);
        await executor.submitTask(
          tdd,
          jobMasterOf(tdd.executionAttemptId.toString(), call.acknowledges),
        );
        return null;
      }
      case "cancelTask":
        await executor.cancelTask(ExecutionAttemptID.parse(call.attempt));
        return null;
      case "updatePartitions":
        await executor.updatePartitions(
          ExecutionAttemptID.parse(call.attempt),
          call.infos.map((info) => PartitionInfoCodec.fromJSON(info)),
        );
        return null;
      case "triggerCheckpoint":
        await executor.triggerCheckpoint(
          ExecutionAttemptID.parse(call.attempt),
          BigInt(call.checkpointId),
          BigInt(call.other),
          CheckpointTriggerOptionsCodec.fromJSON(call),
        );
        return null;
      case "notifyCheckpointAborted":
        await executor[call.method](
          ExecutionAttemptID.parse(call.attempt),
          BigInt(call.checkpointId),
          BigInt(call.other),
        );
        return null;
      case "notifyCheckpointComplete":
        await executor.notifyCheckpointComplete(
          ExecutionAttemptID.parse(call.attempt),
          BigInt(call.checkpointId),
          BigInt(call.other),
          call.lastSubsumed === undefined ? undefined : BigInt(call.lastSubsumed),
        );
        return null;
      case "releasePartitions":
        executor.partitionTracker.stopTrackingAndReleaseJobPartitions(
          call.ids.map((id) => ResultPartitionID.parse(id)),
        );
        return null;
      case "releasePartitionsLocally":
        executor.shuffleEnvironment.releasePartitionsLocally(
          call.ids.map((id) => ResultPartitionID.parse(id)),
        );
        return null;
      case "releaseJobPartitions":
        return (await executor.releaseJobPartitions(JobID.fromHex(call.jobId))).map(String);
      case "deliverJobMessage":
        return executor.deliverJobMessage(JobID.fromHex(call.jobId), call.name, call.payload);
      case "dumpMetrics":
        // The task manager's own metrics are the main thread's (its environment's pool is the
        // shared memory): a slot adds those of its jobs and tasks.
        return registry.dump().filter((dump) => ScopeVariables.JOB_ID in dump.variables);
      case "close":
        await close();
        return null;
    }
  }

  function onMessage(message: ToSlotThread): void {
    switch (message.kind) {
      case "call":
        perform(message.call)
          .then(
            (value) => {
              post({ kind: "result", id: message.id, ok: true, value });
              reportPartitions();
            },
            (error: unknown) =>
              post({ kind: "result", id: message.id, ok: false, error: serializeThrowable(error) }),
          )
          .catch((error: unknown) => onSlotError(asError(error)));
        return;
      case "answer": {
        const waiter = answers.get(message.id);
        answers.delete(message.id);
        if (message.ok) waiter?.resolve(message.value);
        else waiter?.reject(deserializeThrowable(message.error));
        return;
      }
      case "serve": {
        const handler = serve;
        const served =
          handler === undefined
            ? Promise.reject(new Error(`slot ${init.slotIndex} serves no partitions`))
            : handler(message.request);
        served
          .then(
            (value) => post({ kind: "served", id: message.id, ok: true, value }),
            (error: unknown) =>
              post({ kind: "served", id: message.id, ok: false, error: serializeThrowable(error) }),
          )
          .catch((error: unknown) => onSlotError(asError(error)));
        return;
      }
      case "thread-lost": {
        const cause = deserializeThrowable(message.cause);
        for (const listener of lostListeners) listener(message.threadIndex, cause);
        return;
      }
    }
  }

  port.on("message", (message: ToSlotThread) => guarded(() => onMessage(message)));
  post({ kind: "ready" });

  return { close };
}
