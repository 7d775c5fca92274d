import type { LocalBufferPool, NetworkBufferPool } from "@sluice/core";
import type { ShuffleMetricSink } from "@sluice/runtime-api";
import type { InputCounts, SingleInputGate } from "../consumer/single-input-gate.js";
import type { BatchShuffleCounters } from "../partition/batch-shuffle-counters.js";

/**
 * Registers the network shuffle's metrics under Flink's names and kinds (Flink's
 * `NettyShuffleMetricFactory` and the shuffle's part of `TaskIOMetricGroup`), so dashboards and
 * habits carry over. Every metric reads live state when it is reported; nothing here runs per
 * record. See docs/metrics.md for what each one means.
 */

/**
 * Process scope: `Status.Shuffle.Netty.*` of the worker's NetworkBufferPool, and
 * `Status.Shuffle.Netty.BuffersFallbacks` (counter: the pools `fallbacks` says were guaranteed
 * fewer buffers than configured, with `taskmanager.network.memory.exclusive-buffers-fallback`).
 */
export function registerEnvironmentMetrics(
  sink: ShuffleMetricSink,
  pool: NetworkBufferPool,
  fallbacks: () => number,
): void {
  const prefix = "Status.Shuffle.Netty";
  const size = pool.segmentSize;
  sink.registerGauge(`${prefix}.TotalMemorySegments`, () => pool.totalNumberOfMemorySegments);
  sink.registerGauge(`${prefix}.AvailableMemorySegments`, () =>
    pool.getNumberOfAvailableMemorySegments(),
  );
  sink.registerGauge(`${prefix}.UsedMemorySegments`, () => pool.getNumberOfUsedMemorySegments());
  sink.registerGauge(`${prefix}.TotalMemory`, () => pool.totalNumberOfMemorySegments * size);
  sink.registerGauge(
    `${prefix}.AvailableMemory`,
    () => pool.getNumberOfAvailableMemorySegments() * size,
  );
  sink.registerGauge(`${prefix}.UsedMemory`, () => pool.getNumberOfUsedMemorySegments() * size);
  sink.registerGauge(`${prefix}.RequestedMemoryUsage`, () =>
    pool.getEstimatedRequestedSegmentsUsage(),
  );
  sink.registerCounter(`${prefix}.BuffersFallbacks`, fallbacks);
}

/** What the batch-shuffle metrics read of the worker's read memory (absent until first used). */
export type ReadBufferPoolUsage = () =>
  | { readonly available: number; readonly total: number }
  | undefined;

/**
 * Process scope: `Status.Shuffle.Netty.BatchShuffle.*`, what the worker's blocking partitions
 * wrote to disk, compressed and deleted, and its batch-shuffle read memory. Flink has no such
 * metrics; the names follow the `Status.Shuffle.Netty` ones.
 */
export function registerBatchShuffleMetrics(
  sink: ShuffleMetricSink,
  counters: BatchShuffleCounters,
  readBuffers: ReadBufferPoolUsage,
): void {
  const prefix = "Status.Shuffle.Netty.BatchShuffle";
  sink.registerCounter(`${prefix}.FileBytesWritten`, () => counters.fileBytesWritten);
  sink.registerCounter(`${prefix}.BytesBeforeCompression`, () => counters.bytesBeforeCompression);
  sink.registerCounter(`${prefix}.BytesAfterCompression`, () => counters.bytesAfterCompression);
  sink.registerCounter(`${prefix}.FilesCreated`, () => counters.filesCreated);
  sink.registerCounter(`${prefix}.FilesDeleted`, () => counters.filesDeleted);
  sink.registerGauge(`${prefix}.FilesOnDisk`, () => counters.filesOnDisk);
  sink.registerGauge(`${prefix}.TotalReadBuffers`, () => readBuffers()?.total ?? 0);
  sink.registerGauge(`${prefix}.AvailableReadBuffers`, () => readBuffers()?.available ?? 0);
}

/** Registers Flink's pair of a counter `name` and its meter `namePerSecond` over one count. */
function registerCountAndRate(sink: ShuffleMetricSink, name: string, count: () => number): void {
  sink.registerCounter(name, count);
  sink.registerMeter(`${name}PerSecond`, count);
}

/** Used over total buffers of several pools together, as Flink's buffer usage gauges divide. */
function usage(used: number, total: number): number {
  return total === 0 ? 0 : used / total;
}

/** What the output metrics read of a task's partitions. */
export interface MeasuredPartition {
  readonly metrics: { readonly numBytesOut: number; readonly numBuffersOut: number };
  readonly numberOfSubpartitions: number;
  getBufferPool(): LocalBufferPool | undefined;
  /** Queued buffers of all subpartitions, or of one. */
  getNumberOfQueuedBuffers(subpartition?: number): number;
  getNumberOfQueuedBytes(): number;
}

/**
 * Flink's detailed queue metrics (`taskmanager.network.detailed-metrics`) of one gate or
 * partition under `prefix`: the total, smallest, largest and average of `lengths()`.
 */
function registerQueueLengthMetrics(
  sink: ShuffleMetricSink,
  prefix: string,
  lengths: () => readonly number[],
): void {
  const over = (pick: (values: readonly number[]) => number) => () => {
    const values = lengths();
    return values.length === 0 ? 0 : pick(values);
  };
  const total = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0);
  sink.registerGauge(`${prefix}.totalQueueLen`, over(total));
  sink.registerGauge(
    `${prefix}.minQueueLen`,
    over((values) => Math.min(...values)),
  );
  sink.registerGauge(
    `${prefix}.maxQueueLen`,
    over((values) => Math.max(...values)),
  );
  sink.registerGauge(
    `${prefix}.avgQueueLen`,
    over((values) => total(values) / values.length),
  );
}

/**
 * Task scope, output side: `numBytesOut`, `numBuffersOut` (counters, with their `…PerSecond`
 * meters) and `Shuffle.Netty.Output.Buffers.outputQueueLength` / `outputQueueSize` /
 * `outPoolUsage` (gauges) over the task's result partitions; with `detailed`, the queue lengths
 * of each partition's subpartitions under `Shuffle.Netty.Output.<partition index>`.
 */
export function registerOutputMetrics(
  sink: ShuffleMetricSink,
  partitions: readonly MeasuredPartition[],
  detailed = false,
): void {
  if (detailed) {
    partitions.forEach((partition, index) => {
      registerQueueLengthMetrics(sink, `Shuffle.Netty.Output.${index}`, () =>
        Array.from({ length: partition.numberOfSubpartitions }, (_, i) =>
          partition.getNumberOfQueuedBuffers(i),
        ),
      );
    });
  }
  registerCountAndRate(sink, "numBytesOut", () => {
    let bytes = 0;
    for (const partition of partitions) bytes += partition.metrics.numBytesOut;
    return bytes;
  });
  registerCountAndRate(sink, "numBuffersOut", () => {
    let buffers = 0;
    for (const partition of partitions) buffers += partition.metrics.numBuffersOut;
    return buffers;
  });
  const buffers = "Shuffle.Netty.Output.Buffers";
  sink.registerGauge(`${buffers}.outputQueueLength`, () => {
    let queued = 0;
    for (const partition of partitions) queued += partition.getNumberOfQueuedBuffers();
    return queued;
  });
  sink.registerGauge(`${buffers}.outputQueueSize`, () => {
    let bytes = 0;
    for (const partition of partitions) bytes += partition.getNumberOfQueuedBytes();
    return bytes;
  });
  sink.registerGauge(`${buffers}.outPoolUsage`, () => {
    let used = 0;
    let total = 0;
    for (const partition of partitions) {
      const pool = partition.getBufferPool();
      if (pool === undefined || pool.isDestroyed()) continue;
      used += pool.bestEffortGetNumOfUsedBuffers();
      total += pool.getNumBuffers();
    }
    return usage(used, total);
  });
}

/**
 * Task scope, input side, over the task's gates: `numBytesIn`, `numBuffersIn` and Flink's split
 * of them, `Shuffle.Netty.Input.numBytesInLocal` / `…Remote` and `numBuffersInLocal` /
 * `…Remote` (counters, with their `…PerSecond` meters); `Shuffle.Netty.Input.Buffers.`
 * `inputQueueLength`, `inputQueueSize`, `inPoolUsage`, `inputExclusiveBuffersUsage`,
 * `inputFloatingBuffersUsage` (gauges); when the gates debloat their buffers,
 * `debloatedBufferSize` and `estimatedTimeToConsumeBuffersMs` (gauges);
 * `Shuffle.Netty.Input.partitionRequestRetries` (counter: partition requests retried after
 * PartitionNotFound); per gate,
 * `Shuffle.Netty.Input.<gate index>.floatingBuffersOnly` (1 when the gate reads with floating
 * buffers only, 0 with exclusive ones); with `detailed`, the queue lengths of each gate's remote
 * channels under `Shuffle.Netty.Input.<gate index>`.
 */
export function registerInputMetrics(
  sink: ShuffleMetricSink,
  gates: readonly SingleInputGate[],
  detailed = false,
): void {
  if (detailed) {
    gates.forEach((gate, index) => {
      registerQueueLengthMetrics(sink, `Shuffle.Netty.Input.${index}`, () =>
        gate.getQueueLengthsOfRemoteChannels(),
      );
    });
  }
  gates.forEach((gate, index) => {
    // Whether the gate fell back to floating buffers only (the network memory could not
    // guarantee its channels' exclusive buffers): it then needs a credit round trip per buffer.
    sink.registerGauge(`Shuffle.Netty.Input.${index}.floatingBuffersOnly`, () =>
      gate.getBuffersMode() === "floating-only" ? 1 : 0,
    );
  });
  registerCountAndRate(sink, "numBytesIn", () => {
    let bytes = 0;
    for (const gate of gates) bytes += gate.metrics.numBytesIn;
    return bytes;
  });
  registerCountAndRate(sink, "numBuffersIn", () => {
    let buffers = 0;
    for (const gate of gates) buffers += gate.metrics.numBuffersIn;
    return buffers;
  });
  const input = "Shuffle.Netty.Input";
  sink.registerCounter(`${input}.partitionRequestRetries`, () => {
    let retries = 0;
    for (const gate of gates) retries += gate.getPartitionRequestRetries();
    return retries;
  });
  const split: readonly (keyof InputCounts)[] = [
    "numBytesInLocal",
    "numBytesInRemote",
    "numBuffersInLocal",
    "numBuffersInRemote",
  ];
  for (const name of split) {
    registerCountAndRate(sink, `${input}.${name}`, () => {
      let sum = 0;
      for (const gate of gates) sum += gate.getInputCounts()[name];
      return sum;
    });
  }
  const buffers = `${input}.Buffers`;
  sink.registerGauge(`${buffers}.inputQueueLength`, () => {
    let queued = 0;
    for (const gate of gates) queued += gate.getNumberOfQueuedBuffers();
    return queued;
  });
  sink.registerGauge(`${buffers}.inputQueueSize`, () => {
    let bytes = 0;
    for (const gate of gates) bytes += gate.getSizeOfQueuedBuffers();
    return bytes;
  });
  const sumUsage = (pick: "exclusive" | "floating" | "both"): number => {
    let used = 0;
    let total = 0;
    for (const gate of gates) {
      const u = gate.getBufferUsage();
      if (pick !== "floating") {
        used += u.exclusiveUsed;
        total += u.exclusiveTotal;
      }
      if (pick !== "exclusive") {
        used += u.floatingUsed;
        total += u.floatingTotal;
      }
    }
    return usage(used, total);
  };
  sink.registerGauge(`${buffers}.inPoolUsage`, () => sumUsage("both"));
  sink.registerGauge(`${buffers}.inputExclusiveBuffersUsage`, () => sumUsage("exclusive"));
  sink.registerGauge(`${buffers}.inputFloatingBuffersUsage`, () => sumUsage("floating"));
  registerDebloatingMetrics(sink, gates);
}

/**
 * Task scope: the buffer debloater's `debloatedBufferSize` (the largest size a gate of the task
 * announced last, in bytes) and `estimatedTimeToConsumeBuffersMs` (the longest time a gate
 * estimated to consume its buffered data), registered only when the gates debloat, as Flink
 * registers them only with `buffer-debloat.enabled`.
 */
function registerDebloatingMetrics(sink: ShuffleMetricSink, gates: readonly SingleInputGate[]) {
  if (!gates.some((gate) => gate.getDebloatedBufferSize() !== undefined)) return;
  sink.registerGauge("debloatedBufferSize", () => {
    let size = 0;
    for (const gate of gates) size = Math.max(size, gate.getDebloatedBufferSize() ?? 0);
    return size;
  });
  sink.registerGauge("estimatedTimeToConsumeBuffersMs", () => {
    let millis = 0;
    for (const gate of gates) {
      millis = Math.max(millis, gate.getEstimatedTimeToConsumeBuffersMillis() ?? 0);
    }
    return Math.round(millis);
  });
}
