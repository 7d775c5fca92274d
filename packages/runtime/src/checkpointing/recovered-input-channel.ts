import {
  DataType,
  EndOfChannelStateEvent,
  FreeingBufferRecycler,
  MemorySegment,
  NetworkBuffer,
} from "@sluice/core";
import type { InputChannelInfo } from "@sluice/runtime-api";

/** Bytes per recovered buffer: the default segment size, so replay looks like normal input. */
const RECOVERED_BUFFER_BYTES = 32 * 1024;

/**
 * One input channel's recovered in-flight data after a restore from an unaligned checkpoint
 * (Flink's RecoveredInputChannel): the bytes the channel had received and the task had not
 * processed when the checkpoint was taken, handed out as data buffers before anything the live
 * channel delivers, and then {@link EndOfChannelStateEvent}, after which the channel's live data
 * follows. The bytes continue the channel's record stream exactly: they may start and end
 * inside a record, whose rest comes from the producer's recovered output.
 */
export class RecoveredInputChannel {
  /** The channel whose data this is. */
  readonly channelInfo: InputChannelInfo;
  private readonly data: Uint8Array;
  private offset = 0;
  private ended = false;

  constructor(channelInfo: InputChannelInfo, data: Uint8Array) {
    this.channelInfo = channelInfo;
    this.data = data;
  }

  /**
   * The next recovered data buffer (owned by the caller), then EndOfChannelStateEvent once, then
   * `undefined`.
   */
  getNext(): NetworkBuffer | EndOfChannelStateEvent | undefined {
    if (this.offset < this.data.length) {
      const length = Math.min(RECOVERED_BUFFER_BYTES, this.data.length - this.offset);
      const segment = MemorySegment.allocateUnpooled(length);
      segment.memory.set(this.data.subarray(this.offset, this.offset + length));
      this.offset += length;
      return new NetworkBuffer(segment, FreeingBufferRecycler, DataType.DATA_BUFFER, length);
    }
    if (this.ended) return undefined;
    this.ended = true;
    return EndOfChannelStateEvent.INSTANCE;
  }

  /** True once EndOfChannelStateEvent was handed out: the live channel takes over. */
  isFinished(): boolean {
    return this.ended;
  }
}
