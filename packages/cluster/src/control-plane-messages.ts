/**
 * The control plane between a job manager and its task managers (Flink's RPCs between the
 * JobMaster/ResourceManager and the TaskExecutor, reduced to what running jobs needs): every
 * JSON-RPC method each side offers, with the schema its params and its result are checked against
 * on receipt. The gateway methods come from their forwarding tables, so a method added there is
 * offered here too.
 */
import { readFileSync } from "node:fs";
import {
  HighAvailabilityOptions,
  NettyShuffleEnvironmentOptions,
  SecurityOptions,
  TaskManagerOptions,
} from "@sluice/runtime-api";
import * as z from "zod";
import { JobMasterGatewayMethods } from "./job-master-gateway-methods.js";
import { metricQueryResultSchema } from "./metric-query.js";
import { TaskExecutorGatewayMethods } from "./task-executor-gateway-methods.js";
import { count, json, port, text } from "./wire-schemas.js";

/**
 * The control plane's version. A task manager that speaks another one is refused at `hello`;
 * raise it with every incompatible change to a method (a new method is compatible only with peers
 * that know it, so adding one raises it too).
 */
export const CONTROL_PLANE_VERSION = 6;

/** The Sluice release of this package: job manager and task managers must run the same one. */
export const SLUICE_VERSION: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  }
).version;

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
  // A task manager that registers again finds the leader through etcd with its effective
  // configuration: the files must be its own.
  HighAvailabilityOptions.HA_ETCD_SSL_CA.key,
  HighAvailabilityOptions.HA_ETCD_SSL_CERT.key,
  HighAvailabilityOptions.HA_ETCD_SSL_KEY.key,
  HighAvailabilityOptions.HA_ETCD_SSL_KEY_PASSWORD.key,
]);

/** The most task slots one task manager may offer (a thread each, when they are threads). */
export const MAX_TASK_SLOTS = 256;

/** The WebSocket path of the job manager's control plane. */
export const CONTROL_PLANE_PATH = "/sluice/control-plane";

/** `ws://host:port` (`wss` with TLS; IPv6 hosts in brackets): where a job manager listens. */
export function controlPlaneUrl(host: string, port: number, tls: boolean): string {
  return `${tls ? "wss" : "ws"}://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * The application channel, in both directions: a message an application defines (a name and a
 * JSON payload) that the control plane carries without looking inside. As a request its reply is
 * what the receiver's handler returned; as a notification there is no reply.
 */
const application = {
  params: z.object({ name: text(256), payload: json }),
  result: json,
};

const networkBuffers = z.object({ available: count, total: count });

/** Methods the job manager offers (called by task managers), with their params and results. */
export const JobManagerMethods = {
  /** First call on a new connection: versions are compared; the reply is the configuration. */
  hello: {
    params: z.object({
      version: z.int(),
      sluiceVersion: text(64),
      applicationVersion: text(256),
      pid: z.int().min(0),
      hostname: text(256),
      /**
       * With high availability: the fencing token of the leader the task manager looked up. A
       * job manager that does not hold that leadership (a standby, or deposed) refuses it.
       */
      fencingToken: text(64).optional(),
    }),
    result: z.object({
      /** The job manager's configuration minus the keys that describe a host of its own. */
      configuration: z.record(z.string(), json),
    }),
  },
  /**
   * The TaskExecutor runs: where it is, which shuffle plugin it loaded and how many task slots it
   * offers (`taskmanager.numberOfTaskSlots`; version 6 added them).
   */
  registerTaskExecutor: {
    params: z.object({
      resourceId: text(64),
      host: text(256),
      dataPort: port,
      plugin: z.object({ reference: text(1024), package: text(512).nullable() }),
      /** Where its pull-based metric reporters serve (`MetricRegistry.endpoints`). */
      metricEndpoints: z
        .array(z.object({ reporter: text(256), url: text(2048) }))
        .max(64)
        .optional(),
      numberOfSlots: z.int().min(1).max(MAX_TASK_SLOTS),
      /** Its network memory in bytes (the job manager checks a job fits it before deploying). */
      networkMemory: count.optional(),
    }),
    result: z.object({ index: count }),
  },
  application,
  ...JobMasterGatewayMethods,
} as const;

/** Methods a task manager offers (called by the job manager). */
export const TaskManagerMethods = {
  /** Liveness: answered at once. */
  heartbeat: { params: z.object({}), result: z.object({}) },
  /**
   * The task manager is done: it closes its TaskExecutor, reports what it held at close and ends
   * (its application decides what ending means, e.g. exiting non-zero when `failed`).
   */
  shutdown: {
    params: z.object({ reason: text(64 * 1024), failed: z.boolean() }),
    result: z.object({
      /** The network buffer pool at close (null when the plugin has none to show). */
      networkBuffers: networkBuffers.nullable(),
      /** Partitions still holding resources when the TaskExecutor closed. */
      unreleasedPartitions: count,
      /** The task manager process's peak resident set size, in bytes (its `maxRSS`). */
      peakRssBytes: z.number().min(0).optional(),
      /** What the application's shutdown hook returned. */
      application: json.optional(),
    }),
  },
  application,
  /**
   * Every metric of the task manager's registry with its current value (Flink's
   * `MetricQueryService`): what the job manager's dashboard and progress read.
   */
  queryMetrics: { params: z.object({}), result: metricQueryResultSchema },
  ...TaskExecutorGatewayMethods,
} as const;

/** What a task manager reports when the job manager shuts it down. */
export type ShutdownReport = z.output<typeof TaskManagerMethods.shutdown.result>;
