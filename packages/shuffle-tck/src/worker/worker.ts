/**
 * A conformance worker: one process with one TaskExecutor of the plugin under test, driven by the
 * suite over IPC. It deploys tasks exactly as an application's worker does (TaskExecutor.start,
 * submitTask with deployment descriptors as JSON), so the suite tests the path users run. It exits
 * by itself after `close`: a handle left open by the plugin keeps it alive, which the suite
 * reports.
 */
import { readdir, stat, truncate } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ExecutionAttemptID,
  type IntermediateDataSetID,
  JobID,
  ResultPartitionID as PartitionId,
  type ResultPartitionID,
} from "@sluice/core";
import { Configuration, TaskExecutor } from "@sluice/runtime";
import {
  deserializeThrowable,
  type JobMasterGateway,
  serializeThrowable,
  TaskDeploymentDescriptorCodec,
  taskExecutionStateToJSON,
} from "@sluice/runtime/plugin";
import { type ExecutionState, PartitionInfoCodec, TaskManagerOptions } from "@sluice/runtime-api";
import type {
  FromWorker,
  ToWorker,
  TruncatedFiles,
  WorkerRequest,
  WorkerStatus,
} from "../messages.js";
import { tckTasks as tasks } from "./tck-job-module.js";
import { answerTckTaskQuery, queryTckTaskThreads, type TckTaskQuery } from "./tck-task-queries.js";

/**
 * The kit's code, by reference: the TaskExecutor loads this module (the same instance as the
 * import above, on this thread), and so does each of its slot threads when it has them.
 */
const TCK_JOB_MODULE = fileURLToPath(new URL("./tck-job-module.js", import.meta.url));
let executor: TaskExecutor | undefined;
const pendingStates = new Map<
  number,
  { resolve: (state: ExecutionState) => void; reject: (error: Error) => void }
>();
let nextRequestId = 1;

function send(message: FromWorker): void {
  process.send?.(message);
}

/** The suite's job masters, reached over IPC: state reports and producer-state questions. */
const jobMaster: JobMasterGateway = {
  updateTaskExecutionState(update) {
    send({ kind: "state", update: taskExecutionStateToJSON(update) });
  },
  requestPartitionProducerState(
    jobId: JobID,
    resultId: IntermediateDataSetID,
    partitionId: ResultPartitionID,
  ) {
    const requestId = nextRequestId++;
    return new Promise<ExecutionState>((resolve, reject) => {
      pendingStates.set(requestId, { resolve, reject });
      send({
        kind: "producer-state-request",
        requestId,
        jobId: jobId.toString(),
        resultId: resultId.toString(),
        partitionId: partitionId.toString(),
      });
    });
  },
};

/**
 * The worker's own folders (`io.tmp.dirs`, which the suite sets per worker): where the
 * environment of every plugin is told to keep its files (`ShuffleEnvironmentContext.tmpDirPaths`).
 */
function tmpDirsOf(worker: TaskExecutor): string[] {
  const dirs = worker.configuration.getOptional(TaskManagerOptions.TMP_DIRS);
  if (dirs === undefined) throw new Error("the worker was started without io.tmp.dirs");
  return dirs
    .split(",")
    .map((dir) => dir.trim())
    .filter((dir) => dir !== "");
}

/** The regular files under `dirs`, at any depth, sorted. */
async function filesUnder(dirs: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const dir of dirs) {
    for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) files.push(join(entry.parentPath, entry.name));
    }
  }
  return files.sort();
}

/**
 * What the kit's code on this thread, or else on a slot thread, says about `attempt`:
 * `undefined` when no thread runs it.
 */
async function askAboutTask(
  query: TckTaskQuery,
  attempt: string,
): Promise<{ value: unknown } | undefined> {
  const here = answerTckTaskQuery(tasks, query, attempt);
  if (here !== undefined) return here;
  const worker = running();
  if (worker.configuration.get(TaskManagerOptions.TASK_SLOTS_MODE) !== "threaded") return undefined;
  return queryTckTaskThreads(query, attempt, worker.numberOfSlots);
}

function running(): TaskExecutor {
  if (executor === undefined) throw new Error("worker not initialised (send init first)");
  return executor;
}

async function handle(request: WorkerRequest): Promise<unknown> {
  switch (request.cmd) {
    case "init": {
      const configuration = new Configuration(
        request.config,
        request.configDir === undefined ? {} : { configDir: request.configDir },
      );
      executor = await TaskExecutor.start(configuration, { userCodeModule: TCK_JOB_MODULE });
      const { resourceId, host, dataPort } = executor.location;
      return { resourceId: resourceId.toString(), host, dataPort };
    }
    case "submit": {
      const descriptor = TaskDeploymentDescriptorCodec.fromJSON(request.descriptor);
      const delayMs = descriptor.taskConfiguration.deployDelayMs;
      if (typeof delayMs === "number") {
        // A producer that comes up late: its consumers request its partition before it exists.
        // The timer must not keep the worker alive once the suite closes it.
        const timer = setTimeout(() => {
          running()
            .submitTask(descriptor, jobMaster)
            .catch((error: unknown) =>
              jobMaster.updateTaskExecutionState({
                jobId: descriptor.jobId,
                executionAttemptId: descriptor.executionAttemptId,
                state: "FAILED",
                error: serializeThrowable(error),
              }),
            );
        }, delayMs);
        timer.unref();
        return {};
      }
      await running().submitTask(descriptor, jobMaster);
      return {};
    }
    case "cancel":
      await running().cancelTask(ExecutionAttemptID.parse(request.attempt));
      return {};
    case "update":
      await running().updatePartitions(
        ExecutionAttemptID.parse(request.attempt),
        request.infos.map((info) => PartitionInfoCodec.fromJSON(info)),
      );
      return {};
    case "release":
      await running().releasePartitions(
        JobID.fromHex(request.jobId),
        request.partitions.map((id) => PartitionId.parse(id)),
      );
      return {};
    case "producerStatus": {
      const answer = await askAboutTask("producerStatus", request.attempt);
      if (answer === undefined) throw new Error(`no producer ${request.attempt} on this worker`);
      return answer.value;
    }
    case "consumerStatus": {
      const answer = await askAboutTask("consumerStatus", request.attempt);
      return answer?.value ?? { counts: [], total: 0, events: 0 };
    }
    case "resume": {
      const answer = await askAboutTask("resume", request.attempt);
      if (answer === undefined)
        throw new Error(`no task ${request.attempt} of the kit on this worker`);
      return {};
    }
    case "status": {
      const worker = running();
      const status: WorkerStatus = {
        partitions: worker.shuffleEnvironment.getPartitionsOccupyingLocalResources().length,
        files: await filesUnder(tmpDirsOf(worker)),
        tasks: worker.runningTasks.length,
      };
      return status;
    }
    case "truncatePartitionFiles": {
      // Damage as a failing disk or a full file system would: every file loses its second half.
      const files = await filesUnder(tmpDirsOf(running()));
      for (const file of files) {
        const { size } = await stat(file);
        await truncate(file, Math.floor(size / 2));
      }
      const truncated: TruncatedFiles = { files };
      return truncated;
    }
    case "close":
      await executor?.close();
      return {};
  }
}

process.on("message", (message: ToWorker) => {
  if (message.kind === "producer-state") {
    const waiter = pendingStates.get(message.requestId);
    pendingStates.delete(message.requestId);
    if (message.state !== undefined) waiter?.resolve(message.state);
    else
      waiter?.reject(
        deserializeThrowable(message.error ?? { name: "Error", message: "no answer" }),
      );
    return;
  }
  const { id } = message;
  handle(message).then(
    (result) => {
      send({ kind: "response", id, ok: true, result: result ?? {} });
      if (message.cmd === "close") process.disconnect();
    },
    (error: unknown) => send({ kind: "response", id, ok: false, error: serializeThrowable(error) }),
  );
});
