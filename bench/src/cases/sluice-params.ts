/**
 * The settings the cases' systems run with: the throughput defaults, Sluice's config (with the
 * `-D` overrides of the run) and the network memory a case pins.
 */
import type { ThroughputParams } from "../roles.js";

export const KiB = 1024;
export const MB = 1_000_000;
/** Network memory the Sluice environments run with where a case does not say (the default). */
export const DEFAULT_NETWORK_MEMORY_MB = 64;

/** Config that pins a TaskExecutor's network memory to `size`, whatever its total memory. */
export function networkMemory(size: string): Record<string, string> {
  return { "taskmanager.memory.network.min": size, "taskmanager.memory.network.max": size };
}

/** 100 B keyed records over 4 channels, batched, 100 ms buffer timeout: `overrides` change it. */
export function baseParams(overrides: Partial<ThroughputParams>): ThroughputParams {
  return {
    recordSize: 100,
    recordKind: "keyed",
    channels: 4,
    selector: "keyed",
    bufferTimeoutMs: 100,
    config: { "execution.buffer-timeout.interval": "100ms" },
    batching: "batched",
    producerBatch: 1024,
    consumerBatch: 4096,
    honourBackpressure: true,
    ...overrides,
  };
}

/** Overrides from `-D key=value` (for what-if runs; recorded in each row's config). */
let configOverrides: Record<string, string> = {};

/** Sets the `-D` overrides applied to every Sluice environment of the run. */
export function setConfigOverrides(overrides: Record<string, string>): void {
  configOverrides = { ...overrides };
}

/** A Sluice environment's config: the buffer timeout, `extra`, then the run's `-D` overrides. */
export function sluiceConfig(
  bufferTimeoutMs: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    "execution.buffer-timeout.interval": `${bufferTimeoutMs}ms`,
    ...extra,
    ...configOverrides,
  };
}
