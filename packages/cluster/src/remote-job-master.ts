import type { JobMasterGateway } from "@sluice/runtime/plugin";
import type { JobManagerConnection } from "./connect-to-job-manager.js";
import { forwardingGateway } from "./gateway-forwarding.js";
import {
  type JobMasterGatewayCaller,
  JobMasterGatewayMethods,
} from "./job-master-gateway-methods.js";

/**
 * The job master as a task manager's tasks see it (Flink's `JobMasterGateway` over RPC): every
 * method is the forwarding table's, a request on the connection to the job manager, which hands it
 * to the `JobExecution` of the task's job. A state report that cannot be delivered goes to
 * `onUndelivered` (the job manager then learns the task's end from this task manager's loss).
 */
export class RemoteJobMaster
  extends forwardingGateway<JobMasterGateway, JobMasterGatewayCaller>(JobMasterGatewayMethods)
  implements JobMasterGateway
{
  constructor(
    connection: JobManagerConnection,
    onUndelivered: (method: string, error: unknown) => void,
  ) {
    super({
      caller: {},
      request: (method, params) => connection.call(method as never, params as never),
      onUndelivered,
    });
  }
}
