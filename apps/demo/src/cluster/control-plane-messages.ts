/**
 * The control plane between the job manager and its task managers (Flink's RPCs between the
 * JobMaster and the TaskExecutor, reduced to what a job needs): the JSON-RPC methods each side
 * offers and the schema every request's params and every reply is checked against on receipt.
 * Ids travel as strings, descriptors as the runtime's versioned JSON codecs (which check their
 * own fields), errors as `SerializedThrowable`.
 */
import {
  type ExecutionState,
  NettyShuffleEnvironmentOptions,
  SecurityOptions,
  TaskManagerOptions,
} from "@sluice/runtime-api";
import * as z from "zod";

/**
 * The control plane's version. A task manager that speaks another one is refused at `hello`;
 * raise it with every incompatible change to a method below.
 */
export const CONTROL_PLANE_VERSION = 1;

/**
 * Keys that describe one host (its addresses, ports, files): the job manager never hands its own
 * to task managers at `hello`, which set theirs themselves.
 */
export const HOST_LOCAL_KEYS: ReadonlySet<string> = new Set([
  TaskManagerOptions.HOST.key,
  "taskmanager.bind-host",
  NettyShuffleEnvironmentOptions.DATA_BIND_HOST.key,
  NettyShuffleEnvironmentOptions.DATA_PORT.key,
  NettyShuffleEnvironmentOptions.DATA_BIND_PORT.key,
  TaskManagerOptions.TMP_DIRS.key,
  SecurityOptions.SSL_INTERNAL_KEY.key,
  SecurityOptions.SSL_INTERNAL_KEY_PASSWORD.key,
  SecurityOptions.SSL_INTERNAL_CERT.key,
  SecurityOptions.SSL_INTERNAL_CA.key,
]);

/** The WebSocket path of the job manager's control plane. */
export const CONTROL_PLANE_PATH = "/sluice/control-plane";

/** `ws://host:port` (`wss` with TLS; IPv6 hosts in brackets): where a job manager listens. */
export function controlPlaneUrl(host: string, port: number, tls: boolean): string {
  return `${tls ? "wss" : "ws"}://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

const EXECUTION_STATES = [
  "CREATED",
  "SCHEDULED",
  "DEPLOYING",
  "INITIALIZING",
  "RUNNING",
  "FINISHED",
  "CANCELING",
  "CANCELED",
  "FAILED",
  "RECONCILING",
] as const satisfies readonly ExecutionState[];

/** A bounded string: names, ids and messages are short, so nothing huge is held from a peer. */
const text = (max = 4096) => z.string().max(max);
const port = z.int().min(-1).max(65535);
const count = z.int().min(0);

const serializedThrowable = z.object({
  name: text(256),
  code: text(64).optional(),
  message: text(64 * 1024),
  stack: text(64 * 1024).optional(),
});

const json: z.ZodType<unknown> = z.json();

const taskProgress = z.object({
  name: text(512),
  kind: z.enum(["source", "count"]),
  subtaskIndex: count,
  records: z.number().min(0),
  bytes: z.number().min(0),
  poolUsage: z.number().min(0).max(1),
  backPressuredTimeMs: z.number().min(0),
  finished: z.boolean(),
});

const bufferPool = z.object({ available: count, total: count });

/** Methods the job manager offers (called by task managers), with their params and results. */
export const JobManagerMethods = {
  /** First call on a new connection: versions are compared; the reply is the configuration. */
  hello: {
    params: z.object({
      version: z.int(),
      appVersion: text(64),
      pid: z.int().min(0),
      hostname: text(256),
    }),
    result: z.object({
      /** The job manager's configuration minus the keys that describe a host of its own. */
      configuration: z.record(z.string(), json),
    }),
  },
  /** The TaskExecutor runs: where it is and which shuffle plugin it loaded. */
  registerTaskExecutor: {
    params: z.object({
      resourceId: text(64),
      host: text(256),
      dataPort: port,
      plugin: z.object({ reference: text(1024), package: text(512).nullable() }),
    }),
    result: z.object({ index: count }),
  },
  /** A task changed state; a terminal report carries the task's final counters. */
  updateTaskExecutionState: {
    params: z.object({
      jobId: text(64),
      executionAttemptId: text(256),
      state: z.enum(EXECUTION_STATES),
      error: serializedThrowable.optional(),
      result: json.optional(),
      progress: taskProgress.optional(),
    }),
    result: z.null(),
  },
  /** A consumer asks for the state of a partition's producer. */
  requestPartitionProducerState: {
    params: z.object({ jobId: text(64), resultId: text(64), partitionId: text(512) }),
    result: z.object({ state: z.enum(EXECUTION_STATES) }),
  },
  /** Live counters of the task manager's tasks (a notification, every half second). */
  reportProgress: {
    params: z.object({ tasks: z.array(taskProgress).max(4096), rssMb: z.number().min(0) }),
    result: z.null(),
  },
} as const;

/** Methods a task manager offers (called by the job manager). */
export const TaskManagerMethods = {
  /** Liveness: answered at once. */
  heartbeat: { params: z.object({}), result: z.object({}) },
  /** Deploys a task and runs its invokable; the descriptor is checked by its codec. */
  submitTask: { params: z.object({ descriptor: json }), result: z.null() },
  cancelTask: { params: z.object({ executionAttemptId: text(256) }), result: z.null() },
  updatePartitions: {
    params: z.object({ executionAttemptId: text(256), partitionInfos: z.array(json).max(65536) }),
    result: z.null(),
  },
  releasePartitions: {
    params: z.object({ jobId: text(64), partitionIds: z.array(text(512)).max(65536) }),
    result: z.null(),
  },
  /**
   * The job ended: the task manager closes its TaskExecutor, reports what it held at close and
   * exits (non-zero when `failed`).
   */
  shutdown: {
    params: z.object({ reason: text(64 * 1024), failed: z.boolean() }),
    result: z.object({
      peakRssMb: z.number().min(0),
      bufferPool: bufferPool.nullable(),
      unreleasedPartitions: count,
    }),
  },
} as const;

/** A method: the schema of its params and of its result. */
export interface MethodSpec {
  readonly params: z.ZodType;
  readonly result: z.ZodType;
}

/** A table of methods by name. */
export type MethodTable = Readonly<Record<string, MethodSpec>>;

/** The params a method takes. */
export type ParamsOf<M extends MethodSpec> = z.input<M["params"]>;
/** What a method returns. */
export type ResultOf<M extends MethodSpec> = z.output<M["result"]>;
/** What the task manager's shutdown reports. */
export type ShutdownReport = ResultOf<typeof TaskManagerMethods.shutdown>;
