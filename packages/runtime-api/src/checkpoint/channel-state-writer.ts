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
 *   queue (the data the task emitted before the barrier that the consumer has not received);
 *   for a timeoutable aligned barrier, which turns unaligned only if its alignment timeout
 *   passes while it is still queued, the subpartition announces that output as a promise when
 *   it queues the barrier ({@link ChannelStateWriter.addOutputDataFuture}).
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

  /**
   * Announces in-flight output of `subpartition` for `checkpointId` that is known later (Flink's
   * `addOutputDataFuture`): a subpartition queued a timeoutable aligned barrier of the
   * checkpoint. `data` resolves with the buffers the barrier overtook when its alignment timeout
   * passed before it was sent, with none when it was sent aligned, and rejects when the
   * subpartition was released first (the checkpoint cannot complete). The writer completes the
   * checkpoint's output only once every such promise settled; it takes over the buffers as with
   * {@link ChannelStateWriter.addOutputData}. Optional: a writer without it is given the
   * overtaken buffers with `addOutputData` when the timeout passes.
   */
  addOutputDataFuture?(
    checkpointId: bigint,
    subpartition: ResultSubpartitionInfo,
    data: Promise<readonly NetworkBuffer[]>,
  ): void;
}
