import { IntermediateDataSetID, type NetworkBufferPool } from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import { SingleInputGate, type SingleInputGateOptions } from "../consumer/single-input-gate.js";

/**
 * What a test says about the gate it builds; everything else gets a default (Flink's
 * SingleInputGateBuilder). Any option of the gate itself may be given too.
 */
export interface SingleInputGateBuilderOptions
  extends Partial<Omit<SingleInputGateOptions, "bufferPoolFactory">> {
  /** The NetworkBufferPool the gate's floating-buffer pool is created from at `setup()`. */
  readonly networkBufferPool: NetworkBufferPool;
  /** Floating buffers the gate's pool is guaranteed. Default 1. */
  readonly requiredBuffers?: number;
  /** Floating buffers the gate's pool may use at most. */
  readonly maxBuffers: number;
}

/**
 * A SingleInputGate (not set up, without channels) whose floating buffers come from
 * `networkBufferPool`. Defaults: task "consumer", gate 0, a new consumed result, PIPELINED_BOUNDED,
 * one input channel.
 */
export function buildSingleInputGate(options: SingleInputGateBuilderOptions): SingleInputGate {
  const { networkBufferPool, requiredBuffers, maxBuffers, ...gateOptions } = options;
  return new SingleInputGate({
    owningTaskName: "consumer",
    gateIndex: 0,
    consumedResultId: new IntermediateDataSetID(),
    consumedPartitionType: ResultPartitionType.PIPELINED_BOUNDED,
    numberOfInputChannels: 1,
    ...gateOptions,
    bufferPoolFactory: () => networkBufferPool.createBufferPool(requiredBuffers ?? 1, maxBuffers),
  });
}
