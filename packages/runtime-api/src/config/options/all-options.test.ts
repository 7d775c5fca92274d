import { describe, expect, it } from "vitest";
import { ALL_OPTIONS } from "./all-options.js";
import { BatchShuffleOptions } from "./batch-shuffle-options.js";
import { CheckpointingOptions } from "./checkpointing-options.js";
import { ExecutionCheckpointingOptions } from "./execution-checkpointing-options.js";
import { ExecutionOptions } from "./execution-options.js";
import { HeartbeatManagerOptions } from "./heartbeat-manager-options.js";
import { JobManagerOptions } from "./job-manager-options.js";
import { NettyShuffleEnvironmentOptions } from "./netty-shuffle-options.js";
import { NetworkMemoryOptions } from "./network-memory-options.js";
import { RestartStrategyOptions } from "./restart-strategy-options.js";
import { SecurityOptions } from "./security-options.js";
import { ShuffleServiceOptions } from "./shuffle-service-options.js";
import { TaskManagerOptions } from "./task-manager-options.js";

const KB = 1024;
const MB = 1024 * 1024;

describe("ALL_OPTIONS", () => {
  it("lists every key once; a fallback key is another option's key or nobody else's", () => {
    const keys = ALL_OPTIONS.map((option) => option.key);
    expect(new Set(keys).size).toBe(keys.length);
    // rest.address falls back to jobmanager.rpc.address as Flink's does: a fallback may be
    // another option's own key, but two options never share a key that is nobody's own.
    const own = new Set(keys);
    const orphanFallbacks = ALL_OPTIONS.flatMap((option) =>
      option.fallbackKeys.map((f) => f.key).filter((key) => !own.has(key)),
    );
    expect(new Set(orphanFallbacks).size).toBe(orphanFallbacks.length);
    expect(own.has("jobmanager.rpc.address")).toBe(true);
  });

  it("documents every option", () => {
    for (const option of ALL_OPTIONS) {
      expect(option.description.length, option.key).toBeGreaterThan(20);
    }
  });

  it("contains every option of every group", () => {
    const groups = [
      ShuffleServiceOptions,
      BatchShuffleOptions,
      NetworkMemoryOptions,
      NettyShuffleEnvironmentOptions,
      ExecutionOptions,
      ExecutionCheckpointingOptions,
      CheckpointingOptions,
      RestartStrategyOptions,
      SecurityOptions,
      TaskManagerOptions,
      JobManagerOptions,
      HeartbeatManagerOptions,
    ];
    for (const group of groups) {
      for (const option of Object.values(group)) expect(ALL_OPTIONS).toContain(option);
    }
  });

  it("uses Flink's keys and defaults for the shuffle options", () => {
    const defaults = Object.fromEntries(ALL_OPTIONS.map((o) => [o.key, o.defaultValue]));
    expect(defaults).toMatchObject({
      "shuffle-service-factory.class": "@sluice/shuffle-tcp#TcpShuffleServiceFactory",
      "taskmanager.memory.network.min": 64 * MB,
      "taskmanager.memory.network.fraction": 0.1,
      "taskmanager.memory.segment-size": 32 * KB,
      "taskmanager.memory.min-segment-size": 256,
      "taskmanager.network.memory.buffers-per-channel": 2,
      "taskmanager.network.memory.floating-buffers-per-gate": 8,
      "taskmanager.network.memory.max-buffers-per-channel": 10,
      "taskmanager.network.memory.max-overdraft-buffers-per-gate": 20,
      "taskmanager.network.memory.buffers-request-timeout": 30_000,
      "execution.buffer-timeout.interval": 100,
      "execution.buffer-timeout.enabled": true,
      "taskmanager.network.request-backoff.initial": 100,
      "taskmanager.network.request-backoff.max": 10_000,
      "taskmanager.network.partition-request-timeout": 10_000,
      "taskmanager.data.port": 0,
      "taskmanager.network.netty.client.connect-timeout": 120_000,
      "taskmanager.network.retries": 0,
      "taskmanager.network.max-frame-size": 64 * MB,
      "taskmanager.network.max-record-size": 512 * MB,
      "taskmanager.network.spilling-threshold": 5 * MB,
      "security.ssl.internal.enabled": false,
      "taskmanager.data.ssl.enabled": true,
      "taskmanager.network.compression.codec": "LZ4",
      "taskmanager.network.batch-shuffle.compression.enabled": true,
      "taskmanager.network.sort-shuffle.min-buffers": 512,
      "taskmanager.network.sort-shuffle.min-parallelism": 1,
      "taskmanager.memory.framework.off-heap.batch-shuffle.size": 64 * MB,
      "taskmanager.network.memory.buffer-debloat.enabled": false,
      "taskmanager.network.memory.buffer-debloat.target": 1000,
      "taskmanager.network.memory.buffer-debloat.period": 200,
      "taskmanager.network.memory.buffer-debloat.samples": 20,
      "taskmanager.network.memory.buffer-debloat.threshold-percentages": 25,
      "jobmanager.rpc.port": 6123,
      "heartbeat.interval": 10_000,
      "heartbeat.timeout": 50_000,
    });
    expect(defaults["jobmanager.rpc.address"]).toBeUndefined();
    expect(defaults["taskmanager.data.bind-port"]).toBeUndefined();
    expect(defaults["taskmanager.memory.network.max"]).toBeUndefined();
    expect(
      defaults["taskmanager.network.memory.read-buffer.required-per-gate.max"],
    ).toBeUndefined();
  });

  it("uses Flink's keys and defaults for checkpoints and restarts", () => {
    const defaults = Object.fromEntries(ALL_OPTIONS.map((o) => [o.key, o.defaultValue]));
    expect(defaults).toMatchObject({
      "execution.checkpointing.mode": "EXACTLY_ONCE",
      "execution.checkpointing.timeout": 10 * 60_000,
      "execution.checkpointing.max-concurrent-checkpoints": 1,
      "execution.checkpointing.tolerable-failed-checkpoints": 0,
      "execution.checkpointing.externalized-checkpoint-retention": "NO_EXTERNALIZED_CHECKPOINTS",
      "state.checkpoints.num-retained": 1,
      "execution.checkpointing.unaligned.enabled": false,
      "execution.checkpointing.aligned-checkpoint-timeout": 0,
      "restart-strategy.fixed-delay.attempts": 1,
      "restart-strategy.fixed-delay.delay": 1000,
      "restart-strategy.failure-rate.max-failures-per-interval": 1,
      "restart-strategy.failure-rate.failure-rate-interval": 60_000,
      "restart-strategy.failure-rate.delay": 1000,
      "restart-strategy.exponential-delay.initial-backoff": 1000,
      "restart-strategy.exponential-delay.max-backoff": 60_000,
      "restart-strategy.exponential-delay.backoff-multiplier": 1.5,
      "restart-strategy.exponential-delay.reset-backoff-threshold": 3_600_000,
      "restart-strategy.exponential-delay.jitter-factor": 0.1,
      "restart-strategy.exponential-delay.attempts-before-reset-backoff": 2_147_483_647,
      "jobmanager.execution.failover-strategy": "region",
    });
    // Unset in Flink: no checkpoints, no configured directory, a strategy chosen by checkpointing.
    for (const key of [
      "execution.checkpointing.interval",
      "state.checkpoints.dir",
      "restart-strategy.type",
    ]) {
      expect(defaults[key], key).toBeUndefined();
    }
    expect(RestartStrategyOptions.RESTART_STRATEGY.fallbackKeys).toEqual([
      { key: "restart-strategy", isDeprecated: true },
    ]);
    expect(ExecutionCheckpointingOptions.CHECKPOINTING_MODE.parse("at_least_once")).toBe(
      "AT_LEAST_ONCE",
    );
    expect(() => ExecutionCheckpointingOptions.CHECKPOINTING_INTERVAL.parse("5ms")).toThrow(
      /at least 10/,
    );
  });

  it("keeps Flink's old keys as deprecated fallbacks", () => {
    const timeout = NettyShuffleEnvironmentOptions.CLIENT_CONNECT_TIMEOUT;
    expect(timeout.fallbackKeys).toEqual([
      {
        key: "taskmanager.network.netty.client.connectTimeoutSec",
        isDeprecated: true,
        plainNumberUnit: "s",
      },
    ]);
    expect(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL.fallbackKeys.map((f) => f.key)).toEqual([
      "execution.buffer-timeout",
    ]);
    expect(
      BatchShuffleOptions.BATCH_SHUFFLE_COMPRESSION_ENABLED.fallbackKeys.map((f) => f.key),
    ).toEqual(["taskmanager.network.blocking-shuffle.compression.enabled"]);
  });
});
