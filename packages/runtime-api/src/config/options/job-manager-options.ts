import { ConfigOptions, inRange } from "../config-option.js";

/** Where the job manager's control plane is reached (Flink's `JobManagerOptions`). */
export const JobManagerOptions = {
  /** The host task managers connect to. */
  ADDRESS: ConfigOptions.key("jobmanager.rpc.address")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Host name or IP address of the job manager: task managers connect to its control plane " +
        "(registration, deployment, task states, heartbeats) there. The job manager listens on " +
        "it too unless told otherwise.",
    ),

  /** The port task managers connect to. */
  PORT: ConfigOptions.key("jobmanager.rpc.port")
    .intType()
    .defaultValue(6123)
    .withValidator(inRange(0, 65535, "a port number"))
    .withDescription(
      "Port of the job manager's control plane. 0 lets the job manager pick a free port (useful " +
        "only when the task managers are told the port another way, as the demo's one-command " +
        "mode does).",
    ),

  /** How long the job side waits for task managers: a replacement, or the ones it needs. */
  SLOT_REQUEST_TIMEOUT: ConfigOptions.key("slot.request.timeout")
    .durationType()
    .defaultValue("300s")
    .withValidator((value) => (value > 0 ? undefined : "a positive duration"))
    .withDescription(
      "How long a job that restarts after losing a task manager waits for another task manager " +
        "to register and take the lost one's tasks (the cluster's default placement). When none " +
        "comes in time, the restart attempt fails and counts against the restart strategy. Also " +
        "the default time `JobManager.waitForTaskManagers` waits; its error then names the task " +
        "managers that were refused, and why.",
    ),
} as const;
