import { ConfigOptions } from "../config-option.js";

/** Options of a job's execution (Flink's `ExecutionOptions`) that drive the output flusher. */
export const ExecutionOptions = {
  /** Flush interval of the output flusher. */
  BUFFER_TIMEOUT_INTERVAL: ConfigOptions.key("execution.buffer-timeout.interval")
    .durationType()
    .defaultValue("100ms")
    .withDeprecatedKeys("execution.buffer-timeout")
    .withDescription(
      "How often the output flusher flushes every subpartition, so that partly filled buffers " +
        "are sent: the upper bound of the latency a buffer adds. `0` flushes after every record " +
        "(lowest latency, lowest throughput). Only used while `execution.buffer-timeout.enabled` " +
        "is true.",
    ),

  /** Whether the output flusher runs at all. */
  BUFFER_TIMEOUT_ENABLED: ConfigOptions.key("execution.buffer-timeout.enabled")
    .booleanType()
    .defaultValue(true)
    .withDescription(
      "Whether buffers are flushed periodically. `false` sends a buffer only when it is full (or " +
        "on an event), which maximizes throughput; Flink's old `execution.buffer-timeout: -1`.",
    ),
} as const;
