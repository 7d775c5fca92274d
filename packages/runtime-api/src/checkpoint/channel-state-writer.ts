import type { NetworkBuffer } from "@sluice/core";
import type { InputChannelInfo } from "./input-channel-info.js";
import type { ResultSubpartitionInfo } from "./result-subpartition-info.js";

/**
 * Where the in-flight data of an unaligned checkpoint goes (Flink's ChannelStateWriter). The
 * runtime implements it, one per task, and hands it to the task's gates and writers
 * (`setChannelStateWriter`); a plugin calls it when a barrier overtakes data:
 *
 * - **input**: a gate hands over the data buffers its channels received and the task had not
 *   processed when checkpoint `checkpointId` started at the task, then every data buffer a
 *   channel receives until that channel's barrier arrives;
 * - **output**: a subpartition hands over the data buffers an unaligned barrier overtook in its
 *   queue (the data the task emitted before the barrier that the consumer has not received).
 *
 * For one channel, data is added in stream order. The writer takes over one reference of every
 * buffer it is given and recycles it (it copies the bytes first), so the caller passes retained
 * slices (`retainBuffer()`, `BufferConsumer.copy().build()`) of buffers it keeps using. Data of a
 * checkpoint the writer does not know (not started here, or already aborted) is recycled and
 * dropped. Calls are synchronous, on the event loop, and never throw for such data.
 */
export interface ChannelStateWriter {
  /** Adds in-flight input of `channel` for `checkpointId`, in the channel's order. */
  addInputData(
    checkpointId: bigint,
    channel: InputChannelInfo,
    data: readonly NetworkBuffer[],
  ): void;

  /** Adds in-flight output of `subpartition` for `checkpointId`, in the subpartition's order. */
  addOutputData(
    checkpointId: bigint,
    subpartition: ResultSubpartitionInfo,
    data: readonly NetworkBuffer[],
  ): void;
}
