import type { DeploymentOrder, JobGraph } from "@sluice/runtime";
import { JobGraphCodec, type JobGraphJSON } from "@sluice/runtime/plugin";
import {
  type DescriptorCodec,
  defineCodec,
  type JsonFields,
  type JsonObject,
  nested,
} from "@sluice/runtime-api";

const ORDERS: readonly DeploymentOrder[] = ["producers-first", "consumers-first"];

/**
 * What a job manager keeps of a job it runs, in the job graph store: everything a job manager
 * that takes the job over needs to run it as it was submitted (Flink keeps the JobGraph, which
 * carries the job's configuration).
 */
export interface SubmittedJob {
  /** The job. */
  readonly graph: JobGraph;
  /** The job's own configuration (`DeployOptions.configuration`), as flat keys; absent: the job manager's. */
  readonly configuration?: JsonObject;
  /** `DeployOptions.order`; absent: the default. */
  readonly order?: DeploymentOrder;
  /**
   * How many task managers the job ran on when it was submitted: a job manager that takes it over
   * waits for as many (up to `slot.request.timeout`) before it deploys it.
   */
  readonly taskManagers: number;
  /**
   * The `_metadata` of the checkpoint the job was submitted to restore (`DeployOptions.restoreFrom`),
   * or the savepoint it was started from (`DeployOptions.savepointRestore`): what a job manager
   * taking it over restores while the completed-checkpoint store holds none.
   */
  readonly restoredFrom?: string;
  /** `SavepointRestoreSettings.allowNonRestoredState` of the savepoint it was started from. */
  readonly allowNonRestoredState?: boolean;
}

/** The JSON form (version 1) of a {@link SubmittedJob}. */
export interface SubmittedJobJSON {
  readonly version: number;
  readonly jobGraph: JobGraphJSON;
  readonly configuration?: JsonObject;
  readonly order?: DeploymentOrder;
  readonly taskManagers: number;
  readonly restoredFrom?: string;
  readonly allowNonRestoredState?: boolean;
}

function toJSON(job: SubmittedJob): SubmittedJobJSON {
  return {
    version: 1,
    jobGraph: JobGraphCodec.toJSON(job.graph),
    ...(job.configuration === undefined ? {} : { configuration: job.configuration }),
    ...(job.order === undefined ? {} : { order: job.order }),
    taskManagers: job.taskManagers,
    ...(job.restoredFrom === undefined ? {} : { restoredFrom: job.restoredFrom }),
    ...(job.allowNonRestoredState === true ? { allowNonRestoredState: true } : {}),
  };
}

function fromFields(fields: JsonFields): SubmittedJob {
  const graph = nested(fields, "jobGraph", JobGraphCodec);
  const configuration = fields.optionalJsonObject("configuration");
  let order: DeploymentOrder | undefined;
  if (fields.has("order")) {
    const value = fields.string("order");
    if (!(ORDERS as readonly string[]).includes(value)) {
      fields.fail("order", `must be one of ${ORDERS.join(", ")}`, value);
    }
    order = value as DeploymentOrder;
  }
  const restoredFrom = fields.has("restoredFrom") ? fields.string("restoredFrom") : undefined;
  return {
    graph,
    ...(configuration === undefined ? {} : { configuration }),
    ...(order === undefined ? {} : { order }),
    taskManagers: fields.integer("taskManagers", 1),
    ...(restoredFrom === undefined ? {} : { restoredFrom }),
    ...(fields.optionalBoolean("allowNonRestoredState", false)
      ? { allowNonRestoredState: true }
      : {}),
  };
}

/**
 * JSON codec of {@link SubmittedJob}: what the job graph store holds under a job's id. A bad
 * record fails with a DescriptorError (`SLUICE_ERR_DESCRIPTOR`) naming the field.
 */
export const SubmittedJobCodec: DescriptorCodec<SubmittedJob, SubmittedJobJSON> = defineCodec(
  "SubmittedJob",
  toJSON,
  fromFields,
);
