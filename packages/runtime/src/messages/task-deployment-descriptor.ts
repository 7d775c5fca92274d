import { ExecutionAttemptID, JobID } from "@sluice/core";
import {
  CHECKPOINTING_MODES,
  type DescriptorCodec,
  DescriptorError,
  defineCodec,
  type InputGateDeploymentDescriptor,
  InputGateDeploymentDescriptorCodec,
  type InputGateDeploymentDescriptorJSON,
  JsonFields,
  type JsonObject,
  nested,
  type ResultPartitionDeploymentDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
  type ResultPartitionDeploymentDescriptorJSON,
  UPPER_BOUND_MAX_PARALLELISM,
} from "@sluice/runtime-api";
import { PARTITIONER_NAMES, type PartitionerName } from "../partitioner/partitioners.js";
import { parseCheckpointId } from "./acknowledge-checkpoint.js";
import type { CheckpointingMode } from "./checkpointing-mode.js";
import type { FileStateHandle } from "./file-state-handle.js";
import { isLeadershipEpoch } from "./leadership-epoch.js";
import type { UnalignedCheckpointsSettings } from "./unaligned-checkpoints-settings.js";

const TYPE_NAME = "TaskDeploymentDescriptor";

/**
 * How a produced partition's records are routed to its subpartitions: one of Flink's partitioner
 * names and, for `HASH` and `CUSTOM`, the names of the key selector and partitioner the
 * TaskExecutor resolves (see `TaskExecutorOptions`). `HASH` uses the partition's max parallelism
 * as the number of key groups.
 */
export interface PartitionerSpec {
  /** FORWARD, REBALANCE, RESCALE, SHUFFLE, BROADCAST, GLOBAL, HASH or CUSTOM. */
  readonly name: PartitionerName;
  /** HASH and CUSTOM: a registered key selector, or `value` (the record is its own key). */
  readonly keySelector?: string;
  /** CUSTOM: a registered partitioner. */
  readonly partitioner?: string;
}

/** One partition the task produces: the plugin's deployment descriptor plus how records are written. */
export interface ProducedPartitionSpec {
  /** What `ShuffleEnvironment.createResultPartitionWriters` gets. */
  readonly deployment: ResultPartitionDeploymentDescriptor;
  /** The name of the records' serializer (built in, or registered with the TaskExecutor). */
  readonly serializer: string;
  /** How records are routed to subpartitions. */
  readonly partitioner: PartitionerSpec;
}

/** One input gate of the task: the plugin's deployment descriptor plus how records are read. */
export interface InputGateSpec {
  /** What `ShuffleEnvironment.createInputGates` gets. */
  readonly deployment: InputGateDeploymentDescriptor;
  /** The name of the records' serializer (built in, or registered with the TaskExecutor). */
  readonly serializer: string;
}

/**
 * The snapshot of one subtask of a vertex's earlier run, for a restore at another parallelism.
 */
export interface RescaledSubtaskState {
  /** The old subtask's index. */
  readonly subtaskIndex: number;
  /** Its snapshot file; absent when it stored no state. */
  readonly stateHandle?: FileStateHandle;
}

/**
 * The snapshots a subtask of a vertex restored at another parallelism builds its state from
 * (Flink's `StateAssignmentOperation` result for one subtask): those of every subtask of the
 * vertex's earlier run, which the TaskExecutor reads and redistributes
 * (`redistributeTaskState`: keyed state by key group, operator list state by its mode).
 */
export interface RescaledTaskRestore {
  /** The vertex's parallelism in the restored checkpoint. */
  readonly parallelism: number;
  /** Every old subtask's snapshot, by old subtask index. */
  readonly subtasks: readonly RescaledSubtaskState[];
}

/**
 * Which checkpoint a restarted task starts from (Flink's JobManagerTaskRestore): the
 * checkpoint's id and where the task's snapshot in it is.
 */
export interface TaskRestoreSpec {
  /** The completed checkpoint (or savepoint) the job restores. */
  readonly checkpointId: bigint;
  /**
   * The job that took it, when not this one (a restore from a savepoint or a retained checkpoint
   * of an earlier job): every snapshot file names its job, and a restore checks it.
   */
  readonly jobId?: JobID;
  /** The subtask's snapshot file; absent when it stored no state in that checkpoint. */
  readonly stateHandle?: FileStateHandle;
  /**
   * Present instead of {@link stateHandle} when the vertex is restored at another parallelism
   * than the checkpoint's: the snapshots of every old subtask, redistributed at the TaskExecutor.
   */
  readonly rescaled?: RescaledTaskRestore;
  /**
   * True when the subtask had finished before the checkpoint was taken (FLIP-147): the restored
   * task does not run its code again, it finishes its partitions at once. Absent: false.
   */
  readonly finished?: boolean;
}

/**
 * Everything a TaskExecutor needs to deploy one execution attempt of a subtask (Flink's
 * `TaskDeploymentDescriptor`): which job and attempt, which partitions it produces and which
 * gates it reads, the serializer and partitioner of each, the name of the code it runs and that
 * code's parameters. Built by the job side (`JobDeployer`), shipped as JSON
 * ({@link TaskDeploymentDescriptorCodec}).
 */
export interface TaskDeploymentDescriptor {
  /** The job. */
  readonly jobId: JobID;
  /**
   * The job's name (Flink's `JobInformation.jobName`), for metrics (`<job_name>`); absent: the
   * job id stands in.
   */
  readonly jobName?: string;
  /** The execution attempt (vertex, subtask index, attempt number). */
  readonly executionAttemptId: ExecutionAttemptID;
  /**
   * The leadership of the job manager that deployed this attempt (`Task.leadershipEpoch`): 1 to
   * 32 letters and digits, unique per leadership, so that what attempts of different leaders
   * write outside (part files, transactions) never shares a name. Absent: `"0"`.
   */
  readonly leadershipEpoch?: string;
  /** The vertex name, e.g. `"Count"`; the task is shown as `Count (1/2)#0`. */
  readonly taskName: string;
  /** The vertex's parallelism. */
  readonly numberOfSubtasks: number;
  /**
   * The vertex's max parallelism (Flink's `TaskInformation.maxNumberOfSubtasks`): the number of
   * key groups of its keyed state, which its HASH input is routed by. Absent: Flink's default for
   * `numberOfSubtasks` (`computeDefaultMaxParallelism`).
   */
  readonly maxParallelism?: number;
  /**
   * The name of the code the task runs, as registered with the TaskExecutor; absent when the
   * application drives the deployed task itself (`Task.run`).
   */
  readonly invokable?: string;
  /**
   * The job module (`<module>#<export>`, see `JobModule`) whose user code resolves the names in
   * this descriptor: the TaskExecutor loads it from its own host the first time a task of it is
   * deployed. Absent: the code registered with the TaskExecutor.
   */
  readonly userCodeModule?: string;
  /** The partitions the task produces, in order (writer index = position). */
  readonly producedPartitions: readonly ProducedPartitionSpec[];
  /** The gates the task reads, in order (reader index = position). */
  readonly inputGates: readonly InputGateSpec[];
  /** Parameters for the task's code (Flink's task configuration); any JSON object. */
  readonly taskConfiguration: JsonObject;
  /**
   * The job's `execution.checkpointing.mode` when it takes checkpoints; absent when it does not
   * (the task then reads its gates without a barrier handler).
   */
  readonly checkpointingMode?: CheckpointingMode;
  /**
   * Present when the job's exactly-once checkpoints may be unaligned
   * (`execution.checkpointing.unaligned.enabled`), with the aligned checkpoint timeout.
   */
  readonly unalignedCheckpoints?: UnalignedCheckpointsSettings;
  /**
   * `execution.checkpointing.checkpoints-after-tasks-finish` of a checkpointing job (FLIP-147):
   * true when checkpoints go on after some tasks finished, so a task whose inputs ended may be
   * triggered, and a task with a checkpoint listener waits for a checkpoint of its final state
   * before it finishes. Absent: false.
   */
  readonly checkpointsAfterTasksFinish?: boolean;
  /** Present when the task is restored from a completed checkpoint. */
  readonly taskRestore?: TaskRestoreSpec;
}

/** The JSON form (version 1) of {@link TaskDeploymentDescriptor}. */
export interface TaskDeploymentDescriptorJSON {
  readonly version: number;
  readonly jobId: string;
  readonly jobName?: string;
  readonly executionAttemptId: string;
  readonly leadershipEpoch?: string;
  readonly taskName: string;
  readonly numberOfSubtasks: number;
  /** Absent: Flink's default for `numberOfSubtasks`. */
  readonly maxParallelism?: number;
  readonly invokable?: string;
  readonly userCodeModule?: string;
  readonly producedPartitions: readonly {
    readonly deployment: ResultPartitionDeploymentDescriptorJSON;
    readonly serializer: string;
    readonly partitioner: PartitionerSpec;
  }[];
  readonly inputGates: readonly {
    readonly deployment: InputGateDeploymentDescriptorJSON;
    readonly serializer: string;
  }[];
  readonly taskConfiguration: JsonObject;
  readonly checkpointingMode?: CheckpointingMode;
  readonly unalignedCheckpoints?: { readonly alignedCheckpointTimeoutMs: number };
  readonly checkpointsAfterTasksFinish?: boolean;
  readonly taskRestore?: TaskRestoreSpecJSON;
}

/** The JSON form of {@link TaskRestoreSpec}. */
export interface TaskRestoreSpecJSON {
  readonly checkpointId: string;
  readonly jobId?: string;
  readonly stateHandle?: FileStateHandle;
  readonly rescaled?: {
    readonly parallelism: number;
    readonly subtasks: readonly {
      readonly subtaskIndex: number;
      readonly stateHandle?: FileStateHandle;
    }[];
  };
  readonly finished?: boolean;
}

/** `Name (i/n)#attempt`, the task name Flink prints (with a 1-based subtask index). */
export function taskNameWithSubtask(descriptor: TaskDeploymentDescriptor): string {
  const { subtaskIndex, attemptNumber } = descriptor.executionAttemptId;
  return `${descriptor.taskName} (${subtaskIndex + 1}/${descriptor.numberOfSubtasks})#${attemptNumber}`;
}

/**
 * Creates a task deployment descriptor, checking that the subtask index fits the parallelism and
 * that names are not empty.
 *
 * @throws DescriptorError otherwise.
 */
export function createTaskDeploymentDescriptor(
  descriptor: TaskDeploymentDescriptor,
): TaskDeploymentDescriptor {
  const { executionAttemptId, numberOfSubtasks, taskName } = descriptor;
  if (typeof taskName !== "string" || taskName === "") {
    throw new DescriptorError("TaskDeploymentDescriptor: taskName must be a non-empty string");
  }
  if (!Number.isInteger(numberOfSubtasks) || numberOfSubtasks < 1) {
    throw new DescriptorError(
      `TaskDeploymentDescriptor: numberOfSubtasks must be an integer >= 1, got ${numberOfSubtasks}`,
    );
  }
  if (descriptor.leadershipEpoch !== undefined && !isLeadershipEpoch(descriptor.leadershipEpoch)) {
    throw new DescriptorError(
      `TaskDeploymentDescriptor: leadershipEpoch must be 1 to 32 letters and digits, got ${JSON.stringify(descriptor.leadershipEpoch)}`,
    );
  }
  const { maxParallelism } = descriptor;
  if (
    maxParallelism !== undefined &&
    (!Number.isInteger(maxParallelism) ||
      maxParallelism < numberOfSubtasks ||
      maxParallelism > UPPER_BOUND_MAX_PARALLELISM)
  ) {
    throw new DescriptorError(
      `TaskDeploymentDescriptor: maxParallelism of ${taskName} must be an integer in [numberOfSubtasks ${numberOfSubtasks}, ${UPPER_BOUND_MAX_PARALLELISM}], got ${maxParallelism}`,
    );
  }
  if (executionAttemptId.subtaskIndex >= numberOfSubtasks) {
    throw new DescriptorError(
      `TaskDeploymentDescriptor: the subtask index ${executionAttemptId.subtaskIndex} of ${taskName} is not below its numberOfSubtasks ${numberOfSubtasks}`,
    );
  }
  for (const [index, produced] of descriptor.producedPartitions.entries()) {
    checkPartitioner(produced.partitioner, `producedPartitions[${index}].partitioner`);
  }
  return Object.freeze({
    ...descriptor,
    producedPartitions: Object.freeze([...descriptor.producedPartitions]),
    inputGates: Object.freeze([...descriptor.inputGates]),
  });
}

function checkPartitioner(spec: PartitionerSpec, field: string): void {
  if (!PARTITIONER_NAMES.includes(spec.name)) {
    throw new DescriptorError(
      `TaskDeploymentDescriptor: field "${field}.name" must be one of ${PARTITIONER_NAMES.join(", ")}, got ${JSON.stringify(spec.name)}`,
    );
  }
}

/**
 * Converts one field for the JSON form. A hand-built descriptor may hold a wrong value (a JSON
 * form where a decoded descriptor belongs, a missing id): the error names the field instead of
 * surfacing as a TypeError.
 */
function convert<T>(field: string, value: () => T): T {
  try {
    return value();
  } catch (error) {
    if (error instanceof DescriptorError) {
      throw new DescriptorError(`${TYPE_NAME}: in field "${field}": ${error.message}`, {
        cause: error,
      });
    }
    throw new DescriptorError(
      `${TYPE_NAME}: field "${field}" is not a valid decoded value (${(error as Error).message})`,
      { cause: error },
    );
  }
}

function toJSON(descriptor: TaskDeploymentDescriptor): TaskDeploymentDescriptorJSON {
  return {
    version: 1,
    jobId: convert("jobId", () => descriptor.jobId.toString()),
    ...(descriptor.jobName === undefined ? {} : { jobName: descriptor.jobName }),
    executionAttemptId: convert("executionAttemptId", () =>
      descriptor.executionAttemptId.toString(),
    ),
    ...(descriptor.leadershipEpoch === undefined
      ? {}
      : { leadershipEpoch: descriptor.leadershipEpoch }),
    taskName: descriptor.taskName,
    numberOfSubtasks: descriptor.numberOfSubtasks,
    ...(descriptor.maxParallelism === undefined
      ? {}
      : { maxParallelism: descriptor.maxParallelism }),
    ...(descriptor.invokable === undefined ? {} : { invokable: descriptor.invokable }),
    ...(descriptor.userCodeModule === undefined
      ? {}
      : { userCodeModule: descriptor.userCodeModule }),
    producedPartitions: convert("producedPartitions", () => [...descriptor.producedPartitions]).map(
      (produced, i) => ({
        deployment: convert(`producedPartitions[${i}].deployment`, () =>
          ResultPartitionDeploymentDescriptorCodec.toJSON(produced.deployment),
        ),
        serializer: produced.serializer,
        partitioner: { ...produced.partitioner },
      }),
    ),
    inputGates: convert("inputGates", () => [...descriptor.inputGates]).map((gate, i) => ({
      deployment: convert(`inputGates[${i}].deployment`, () =>
        InputGateDeploymentDescriptorCodec.toJSON(gate.deployment),
      ),
      serializer: gate.serializer,
    })),
    taskConfiguration: descriptor.taskConfiguration,
    ...(descriptor.checkpointingMode === undefined
      ? {}
      : { checkpointingMode: descriptor.checkpointingMode }),
    ...(descriptor.unalignedCheckpoints === undefined
      ? {}
      : {
          unalignedCheckpoints: {
            alignedCheckpointTimeoutMs: descriptor.unalignedCheckpoints.alignedCheckpointTimeoutMs,
          },
        }),
    ...(descriptor.checkpointsAfterTasksFinish === true
      ? { checkpointsAfterTasksFinish: true }
      : {}),
    ...(descriptor.taskRestore === undefined
      ? {}
      : { taskRestore: taskRestoreToJSON(descriptor.taskRestore) }),
  };
}

function taskRestoreToJSON(restore: TaskRestoreSpec): TaskRestoreSpecJSON {
  const { checkpointId, stateHandle, rescaled } = restore;
  return {
    checkpointId: convert("taskRestore.checkpointId", () => checkpointId.toString()),
    ...(restore.jobId === undefined ? {} : { jobId: restore.jobId.toString() }),
    ...(restore.finished === true ? { finished: true } : {}),
    ...(stateHandle === undefined ? {} : { stateHandle: handleToJSON(stateHandle) }),
    ...(rescaled === undefined
      ? {}
      : {
          rescaled: {
            parallelism: rescaled.parallelism,
            subtasks: rescaled.subtasks.map((subtask) => ({
              subtaskIndex: subtask.subtaskIndex,
              ...(subtask.stateHandle === undefined
                ? {}
                : { stateHandle: handleToJSON(subtask.stateHandle) }),
            })),
          },
        }),
  };
}

function handleToJSON(handle: FileStateHandle): FileStateHandle {
  return { path: handle.path, size: handle.size };
}

function readHandle(fields: JsonFields): FileStateHandle {
  const handle = fields.object("stateHandle");
  return { path: handle.string("path"), size: handle.integer("size", 0) };
}

function readTaskRestore(fields: JsonFields): TaskRestoreSpec {
  const checkpointId = fields.id("checkpointId", "a decimal checkpoint id", parseCheckpointId);
  const jobId = fields.has("jobId")
    ? fields.id("jobId", "a JobID (32 hex digits)", JobID.fromHex)
    : undefined;
  const finished = fields.optionalBoolean("finished", false) ? { finished: true } : {};
  let rescaled: RescaledTaskRestore | undefined;
  if (fields.has("rescaled")) {
    const entry = fields.object("rescaled");
    const parallelism = entry.integer("parallelism", 1, 2 ** 31 - 1);
    const subtasks = entry.array("subtasks").map((item, index) => {
      const subtask = JsonFields.of(TYPE_NAME, `taskRestore.rescaled.subtasks[${index}]`, item);
      return {
        subtaskIndex: subtask.integer("subtaskIndex", 0, parallelism - 1),
        ...(subtask.has("stateHandle") ? { stateHandle: readHandle(subtask) } : {}),
      };
    });
    rescaled = { parallelism, subtasks };
  }
  return {
    checkpointId,
    ...(jobId === undefined ? {} : { jobId }),
    ...(fields.has("stateHandle") ? { stateHandle: readHandle(fields) } : {}),
    ...(rescaled === undefined ? {} : { rescaled }),
    ...finished,
  };
}

function optionalString(fields: JsonFields, field: string): string | undefined {
  return fields.has(field) ? fields.string(field) : undefined;
}

function readPartitioner(fields: JsonFields): PartitionerSpec {
  const name = fields.string("name");
  if (!(PARTITIONER_NAMES as readonly string[]).includes(name)) {
    fields.fail("name", `must be one of ${PARTITIONER_NAMES.join(", ")}`, name);
  }
  const keySelector = optionalString(fields, "keySelector");
  const partitioner = optionalString(fields, "partitioner");
  return {
    name: name as PartitionerName,
    ...(keySelector === undefined ? {} : { keySelector }),
    ...(partitioner === undefined ? {} : { partitioner }),
  };
}

function fromFields(fields: JsonFields): TaskDeploymentDescriptor {
  const jobId = fields.id("jobId", "a JobID (32 hex digits)", JobID.fromHex);
  const jobName = optionalString(fields, "jobName");
  const executionAttemptId = fields.id(
    "executionAttemptId",
    "an ExecutionAttemptID (<hex>_<hex>_<subtask>_<attempt>)",
    ExecutionAttemptID.parse,
  );
  const leadershipEpoch = optionalString(fields, "leadershipEpoch");
  if (leadershipEpoch !== undefined && !isLeadershipEpoch(leadershipEpoch)) {
    fields.fail("leadershipEpoch", "must be 1 to 32 letters and digits", leadershipEpoch);
  }
  const taskName = fields.string("taskName");
  const numberOfSubtasks = fields.integer("numberOfSubtasks", 1, 2 ** 31 - 1);
  const maxParallelism = fields.has("maxParallelism")
    ? fields.integer("maxParallelism", numberOfSubtasks, UPPER_BOUND_MAX_PARALLELISM)
    : undefined;
  const invokable = optionalString(fields, "invokable");
  const userCodeModule = optionalString(fields, "userCodeModule");
  const producedPartitions = fields.array("producedPartitions").map((item, index) => {
    const path = `producedPartitions[${index}]`;
    const entry = JsonFields.of(TYPE_NAME, path, item);
    return {
      deployment: nested(entry, "deployment", ResultPartitionDeploymentDescriptorCodec),
      serializer: entry.string("serializer"),
      partitioner: readPartitioner(entry.object("partitioner")),
    };
  });
  const inputGates = fields.array("inputGates").map((item, index) => {
    const entry = JsonFields.of(TYPE_NAME, `inputGates[${index}]`, item);
    return {
      deployment: nested(entry, "deployment", InputGateDeploymentDescriptorCodec),
      serializer: entry.string("serializer"),
    };
  });
  const taskConfiguration = fields.optionalJsonObject("taskConfiguration") ?? {};
  const checkpointingMode = optionalString(fields, "checkpointingMode");
  if (
    checkpointingMode !== undefined &&
    !(CHECKPOINTING_MODES as readonly string[]).includes(checkpointingMode)
  ) {
    fields.fail(
      "checkpointingMode",
      `must be one of ${CHECKPOINTING_MODES.join(", ")}`,
      checkpointingMode,
    );
  }
  const taskRestore = fields.has("taskRestore")
    ? readTaskRestore(fields.object("taskRestore"))
    : undefined;
  const unalignedCheckpoints = fields.has("unalignedCheckpoints")
    ? {
        alignedCheckpointTimeoutMs: fields
          .object("unalignedCheckpoints")
          .integer("alignedCheckpointTimeoutMs", 0),
      }
    : undefined;
  return createTaskDeploymentDescriptor({
    jobId,
    ...(jobName === undefined ? {} : { jobName }),
    executionAttemptId,
    ...(leadershipEpoch === undefined ? {} : { leadershipEpoch }),
    taskName,
    numberOfSubtasks,
    ...(maxParallelism === undefined ? {} : { maxParallelism }),
    ...(invokable === undefined ? {} : { invokable }),
    ...(userCodeModule === undefined ? {} : { userCodeModule }),
    producedPartitions,
    inputGates,
    taskConfiguration,
    ...(checkpointingMode === undefined
      ? {}
      : { checkpointingMode: checkpointingMode as CheckpointingMode }),
    ...(unalignedCheckpoints === undefined ? {} : { unalignedCheckpoints }),
    ...(fields.optionalBoolean("checkpointsAfterTasksFinish", false)
      ? { checkpointsAfterTasksFinish: true }
      : {}),
    ...(taskRestore === undefined ? {} : { taskRestore }),
  });
}

/** JSON codec of {@link TaskDeploymentDescriptor}. */
export const TaskDeploymentDescriptorCodec: DescriptorCodec<
  TaskDeploymentDescriptor,
  TaskDeploymentDescriptorJSON
> = defineCodec(TYPE_NAME, toJSON, fromFields);
