import { IllegalStateError, type JobID } from "@sluice/core";
import type { JobMasterGateway } from "@sluice/runtime/plugin";
import { forwardingGateway } from "../gateway-forwarding.js";
import {
  type JobMasterGatewayCaller,
  JobMasterGatewayMethods,
  type JobMasterGatewayReceiver,
} from "../job-master-gateway-methods.js";
import { inProcessForwarder } from "./in-process-forwarder.js";

/** A JobMasterGateway whose every call goes through the control plane's forwarding table. */
export class ForwardedJobMaster extends forwardingGateway<JobMasterGateway, JobMasterGatewayCaller>(
  JobMasterGatewayMethods,
) {}

/**
 * `jobMaster`, the job master of `jobId` alone, behind its forwarding table in one process: what
 * a task manager would call (`remote`), and the reports the receiver could not deliver.
 */
export function forwardJobMaster(jobMaster: JobMasterGateway, jobId: JobID) {
  const receiver: JobMasterGatewayReceiver = {
    jobMasterOf: (id) => {
      if (!id.equals(jobId)) throw new IllegalStateError(`no job ${id}`);
      return jobMaster;
    },
    // These tests are about the codecs; which task manager may report is the endpoint's test.
    reporterFor: (id) => receiver.jobMasterOf(id),
    attemptReported: () => {},
  };
  const { forwarder, undelivered } = inProcessForwarder(JobMasterGatewayMethods, receiver, {});
  return { remote: new ForwardedJobMaster(forwarder), forwarder, undelivered };
}
