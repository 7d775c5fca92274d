import type { NetworkBufferPool } from "@sluice/core";
import type { ResultPartitionMetrics, ShuffleMetricSink } from "@sluice/runtime-api";
import type { SingleInputGate } from "../consumer/single-input-gate.js";

/**
 * Registers Flink's metric names (docs/ops/metrics.md) so dashboards and habits carry over.
 * Gauges read live state; a sink (Prometheus, OpenTelemetry, logs) polls them when it reports.
 */

/** Process scope: `Status.Shuffle.Netty.*` of the worker's NetworkBufferPool. */
export function registerEnvironmentMetrics(sink: ShuffleMetricSink, pool: NetworkBufferPool): void {
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
}

function max(values: Iterable<number>): number {
  let result = 0;
  for (const value of values) if (value > result) result = value;
  return result;
}

function sum(values: Iterable<number>): number {
  let result = 0;
  for (const value of values) result += value;
  return result;
}

/** Task scope, output side: `Shuffle.Netty.Output.*` over the task's result partitions. */
export function registerOutputMetrics(
  sink: ShuffleMetricSink,
  partitions: readonly {
    readonly metrics: ResultPartitionMetrics;
    getNumberOfQueuedBuffers(): number;
    isAvailable(): boolean;
    isReleased(): boolean;
  }[],
): void {
  const prefix = "Shuffle.Netty.Output";
  // Flink reports the most used pool: one back-pressured output is what matters.
  sink.registerGauge(`${prefix}.Buffers.outPoolUsage`, () =>
    max(partitions.map((p) => p.metrics.outPoolUsage())),
  );
  sink.registerGauge(`${prefix}.Buffers.outputQueueLength`, () =>
    sum(partitions.map((p) => p.getNumberOfQueuedBuffers())),
  );
  sink.registerGauge(`${prefix}.numBytesOut`, () =>
    sum(partitions.map((p) => p.metrics.numBytesOut)),
  );
  sink.registerGauge(`${prefix}.numBuffersOut`, () =>
    sum(partitions.map((p) => p.metrics.numBuffersOut)),
  );
  sink.registerGauge(`${prefix}.backPressuredTimeMs`, () =>
    max(partitions.map((p) => p.metrics.backPressuredTimeMs)),
  );
  sink.registerGauge(`${prefix}.isBackPressured`, () =>
    partitions.some((p) => !p.isAvailable() && !p.isReleased()) ? 1 : 0,
  );
}

/** Task scope, input side: `Shuffle.Netty.Input.*` over the task's input gates. */
export function registerInputMetrics(
  sink: ShuffleMetricSink,
  gates: readonly SingleInputGate[],
): void {
  const prefix = "Shuffle.Netty.Input";
  sink.registerGauge(`${prefix}.Buffers.inPoolUsage`, () =>
    max(gates.map((g) => g.metrics.inPoolUsage())),
  );
  sink.registerGauge(`${prefix}.numBytesIn`, () => sum(gates.map((g) => g.metrics.numBytesIn)));
  sink.registerGauge(`${prefix}.numBuffersIn`, () => sum(gates.map((g) => g.metrics.numBuffersIn)));
}
