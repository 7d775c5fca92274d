import { atLeast, ConfigOptions, inRange } from "../config-option.js";
import { formatMemorySize } from "../memory-size.js";

const atLeastBytes = (min: number) => (value: number) =>
  value >= min ? undefined : `a size of at least ${formatMemorySize(min)}`;

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

  /** Which tasks a failure restarts (Flink's `jobmanager.execution.failover-strategy`). */
  EXECUTION_FAILOVER_STRATEGY: ConfigOptions.key("jobmanager.execution.failover-strategy")
    .enumType(["full", "region"] as const)
    .defaultValue("region")
    .withDescription(
      "`region`: a failed task restarts only the pipelined regions that must re-run (its own, " +
        "the readers of what they produce, and the producers of partitions that are lost); " +
        "`full`: every task of the job restarts. A job that takes checkpoints restores the " +
        "restarted tasks from its latest completed checkpoint (only them with `region`; the " +
        "other regions run on). How often a job restarts is `restart-strategy.*`'s.",
    ),

  /** How long a deployed task may take to report RUNNING (Sluice). */
  DEPLOYMENT_TIMEOUT: ConfigOptions.key("jobmanager.deployment.timeout")
    .durationType()
    .defaultValue("2min")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: a task deployed to a task manager that has not reported RUNNING this long after " +
        "its deployment was sent fails with `SLUICE_ERR_TIMEOUT` naming the task manager, and " +
        "the job restarts or fails as its restart strategy says. It catches a task manager that " +
        "accepts tasks and runs none while it still answers heartbeats.",
    ),

  /** The largest control-plane message the job manager accepts (Flink's `pekko.framesize`). */
  MAX_MESSAGE_SIZE: ConfigOptions.key("jobmanager.rpc.max-message-size")
    .memoryType()
    .defaultValue("10mb")
    .withValidator(atLeastBytes(64 * 1024))
    .withDescription(
      "Sluice: the largest message the job manager's control plane accepts from a registered " +
        "task manager (Flink bounds its RPC messages by `pekko.framesize`, 10 MiB). A larger " +
        "one closes the connection (WebSocket code 1009) before it is parsed, and the task " +
        "manager is lost.",
    ),

  /** The largest message before a task manager registered (Sluice). */
  MAX_UNREGISTERED_MESSAGE_SIZE: ConfigOptions.key("jobmanager.rpc.max-unregistered-message-size")
    .memoryType()
    .defaultValue("64kb")
    .withValidator(atLeastBytes(4 * 1024))
    .withDescription(
      "Sluice: the largest message the job manager accepts from a connection that has not " +
        "registered a TaskExecutor yet (`hello` and `registerTaskExecutor` are a few hundred " +
        "bytes). A larger one is refused on its length, before it is parsed, and the connection " +
        "is closed.",
    ),

  /** How many control connections the job manager keeps open at once (Sluice). */
  MAX_CONNECTIONS: ConfigOptions.key("jobmanager.rpc.max-connections")
    .intType()
    .defaultValue(1000)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Sluice: how many connections the job manager's control plane keeps open at once, " +
        "registered task managers and connections still in their handshake or registration " +
        "alike. A further connection is closed at once, with a warning.",
    ),

  /** How long a connection may take to register a TaskExecutor (Sluice). */
  REGISTRATION_TIMEOUT: ConfigOptions.key("jobmanager.rpc.registration-timeout")
    .durationType()
    .defaultValue("30s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: a control connection that has not registered a TaskExecutor this long after it " +
        "was accepted (TLS handshake, WebSocket upgrade, `hello` and `registerTaskExecutor` " +
        "included) is closed, with a warning.",
    ),

  /** Bytes queued for a task manager that does not read them (Sluice). */
  MAX_OUTBOUND_BYTES_PER_CONNECTION: ConfigOptions.key(
    "jobmanager.rpc.max-outbound-bytes-per-connection",
  )
    .memoryType()
    .defaultValue("16mb")
    .withValidator(atLeastBytes(64 * 1024))
    .withDescription(
      "Sluice: the outbound budget of one control connection: messages the job manager sent " +
        "and the socket has not taken yet. At the budget the job manager stops reading from " +
        "that peer until half of it drained; beyond twice the budget it closes the connection " +
        "(`SLUICE_ERR_LIMIT_EXCEEDED` in the warning).",
    ),

  /** Requests of one connection handled at once (Sluice). */
  MAX_CONCURRENT_REQUESTS_PER_CONNECTION: ConfigOptions.key(
    "jobmanager.rpc.max-concurrent-requests-per-connection",
  )
    .intType()
    .defaultValue(64)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Sluice: how many requests and notifications of one control connection the job manager " +
        "handles at once; at the limit it stops reading from that peer until one finished.",
    ),
} as const;
