import type { ResultPartitionType } from "@sluice/runtime-api";
import type { NetworkShuffleEnvironmentConfiguration } from "./network-shuffle-environment-configuration.js";

/** How an input gate's buffers are split (Flink's GateBuffersSpec). */
export interface GateBuffersSpec {
  /** Exclusive buffers each remote channel takes at setup (its initial credit). */
  readonly exclusiveBuffersPerChannel: number;
  /** Minimum size of the gate's floating pool. */
  readonly requiredFloatingBuffers: number;
  /** Maximum size of the gate's floating pool. */
  readonly totalFloatingBuffers: number;
}

/** Flink's default cap on a batch gate's required buffers. */
const BATCH_MAX_REQUIRED_BUFFERS_PER_GATE = 1000;

/**
 * Flink's gate buffer formula (InputGateSpecUtils): the gate needs N·bpc + 1 buffers but at most
 * `maxRequiredBuffersPerGate` (unlimited for pipelined, 1000 for batch); exclusive buffers per
 * channel shrink to fit, and what is left becomes floating buffers.
 */
export function createGateBuffersSpec(
  maxRequiredBuffersPerGate: number | undefined,
  buffersPerChannel: number,
  floatingBuffersPerGate: number,
  partitionType: ResultPartitionType,
  numberOfInputChannels: number,
): GateBuffersSpec {
  const maxRequired =
    maxRequiredBuffersPerGate ??
    (partitionType.isPipelined ? Number.MAX_SAFE_INTEGER : BATCH_MAX_REQUIRED_BUFFERS_PER_GATE);
  const n = numberOfInputChannels;
  const targetRequired = n * buffersPerChannel + 1;
  const targetTotal = n * buffersPerChannel + floatingBuffersPerGate;
  const required = Math.min(maxRequired, targetRequired);
  const exclusivePerChannel = Math.min(buffersPerChannel, Math.floor((required - 1) / n));
  return {
    exclusiveBuffersPerChannel: exclusivePerChannel,
    requiredFloatingBuffers: required - n * exclusivePerChannel,
    totalFloatingBuffers: targetTotal - n * exclusivePerChannel,
  };
}

/**
 * The gate's buffers in floating-only mode: no exclusive buffers, and a floating pool guaranteed
 * `requiredFloatingBuffers` (at least 1, Flink's minimum with `buffers-per-channel: 0`). Its
 * maximum stays the gate's target, N·bpc + floating, so that the pool grows back to what the
 * exclusive buffers would have given as soon as the network memory has buffers to spare.
 */
export function floatingOnlyGateBuffersSpec(
  spec: GateBuffersSpec,
  requiredFloatingBuffers: number,
): GateBuffersSpec {
  const required = Math.max(1, requiredFloatingBuffers);
  return {
    exclusiveBuffersPerChannel: 0,
    requiredFloatingBuffers: required,
    totalFloatingBuffers: Math.max(required, spec.totalFloatingBuffers),
  };
}

/**
 * The most buffers a gate asks for (Flink's `GateBuffersSpec.getMaxBuffersPerGate`): its
 * channels' exclusive buffers plus the floating pool's maximum. This, not the minimum, is what
 * a task announces, so that a task deployed on announced memory gets its buffers without waiting
 * for other pools (FLINK-12852).
 */
export function targetBuffersPerGate(spec: GateBuffersSpec, numberOfInputChannels: number): number {
  return numberOfInputChannels * spec.exclusiveBuffersPerChannel + spec.totalFloatingBuffers;
}

/**
 * The smallest guarantee of a pipelined output pool that falls back for lack of memory
 * (Flink's minimum of a hybrid partition's pool, which likewise copes with fewer buffers than
 * subpartitions).
 */
export const FALLBACK_OUTPUT_POOL_MIN_BUFFERS = 8;

/** The sort-merge settings that size a blocking partition's pool. */
export interface SortShuffleSettings {
  /** `taskmanager.network.sort-shuffle.min-buffers`. */
  readonly minBuffers: number;
  /** `taskmanager.network.sort-shuffle.min-parallelism`. */
  readonly minParallelism: number;
}

/** The sizes of an output pool as a worker's settings give them (see {@link outputPoolSize}). */
export function configuredOutputPoolSize(
  settings: Pick<
    NetworkShuffleEnvironmentConfiguration,
    | "buffersPerChannel"
    | "floatingBuffersPerGate"
    | "sortShuffleMinBuffers"
    | "sortShuffleMinParallelism"
  >,
  numberOfSubpartitions: number,
  partitionType: ResultPartitionType,
): { readonly min: number; readonly max: number } {
  return outputPoolSize(
    numberOfSubpartitions,
    settings.buffersPerChannel,
    settings.floatingBuffersPerGate,
    partitionType,
    {
      minBuffers: settings.sortShuffleMinBuffers,
      minParallelism: settings.sortShuffleMinParallelism,
    },
  );
}

/**
 * Flink's output pool sizes (NettyShuffleUtils): at least one buffer per subpartition plus one;
 * at most subpartitions × buffers-per-channel + floating for bounded types, unlimited otherwise.
 * A sort-merge (blocking) partition instead gets `sort-shuffle.min-buffers` and at most
 * max(that, 4 × subpartitions), which bounds its network memory whatever it writes.
 */
export function outputPoolSize(
  numberOfSubpartitions: number,
  buffersPerChannel: number,
  floatingBuffersPerGate: number,
  partitionType: ResultPartitionType,
  sortShuffle?: SortShuffleSettings,
): { readonly min: number; readonly max: number } {
  if (
    partitionType.isBlocking &&
    sortShuffle !== undefined &&
    numberOfSubpartitions >= sortShuffle.minParallelism
  ) {
    const min = sortShuffle.minBuffers;
    return { min, max: Math.max(min, 4 * numberOfSubpartitions) };
  }
  const min = numberOfSubpartitions + 1;
  const max = partitionType.isBounded
    ? Math.max(min, numberOfSubpartitions * buffersPerChannel + floatingBuffersPerGate)
    : Number.MAX_SAFE_INTEGER;
  return { min, max };
}
