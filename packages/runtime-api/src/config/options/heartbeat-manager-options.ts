import { ConfigOptions } from "../config-option.js";

/**
 * Liveness between the job manager and its task managers (Flink's `HeartbeatManagerOptions`): the
 * job manager asks every task manager for a heartbeat each interval; either side that hears
 * nothing from the other for the timeout considers it lost.
 */
export const HeartbeatManagerOptions = {
  /** How often heartbeats are requested. */
  HEARTBEAT_INTERVAL: ConfigOptions.key("heartbeat.interval")
    .durationType()
    .defaultValue("10s")
    .withValidator((value) => (value > 0 ? undefined : "a positive duration"))
    .withDescription(
      "How often the job manager requests a heartbeat from each task manager. Must be smaller " +
        "than `heartbeat.timeout`.",
    ),

  /** How long silence is tolerated. */
  HEARTBEAT_TIMEOUT: ConfigOptions.key("heartbeat.timeout")
    .durationType()
    .defaultValue("50s")
    .withValidator((value) => (value > 0 ? undefined : "a positive duration"))
    .withDescription(
      "How long the job manager waits for a task manager's heartbeat (and a task manager for " +
        "the job manager's heartbeat request) before it considers the other side lost: the job " +
        "then fails naming the task manager, or the task manager shuts down. A closed connection " +
        "is noticed at once; the timeout catches hosts that vanish without closing it.",
    ),
} as const;
