import type { NetworkBuffer } from "@sluice/core";
import type {
  ChannelStateWriter,
  InputChannelInfo,
  ResultSubpartitionInfo,
} from "@sluice/runtime-api";

/** One call of a {@link RecordingChannelStateWriter}: which checkpoint, channel and bytes. */
export interface RecordedChannelState {
  readonly checkpointId: bigint;
  readonly kind: "input" | "output";
  /** `gate:channel` or `partition:subpartition`. */
  readonly channel: string;
  /** The bytes of each buffer handed over, copied. */
  readonly data: readonly number[][];
}

/**
 * A ChannelStateWriter for this package's tests (the runtime has the real one): records what
 * channels and subpartitions hand over, copying the bytes and recycling every buffer as the
 * contract requires.
 */
export class RecordingChannelStateWriter implements ChannelStateWriter {
  readonly calls: RecordedChannelState[] = [];

  addInputData(checkpointId: bigint, channel: InputChannelInfo, data: readonly NetworkBuffer[]) {
    this.record(checkpointId, "input", `${channel.gateIndex}:${channel.channelIndex}`, data);
  }

  addOutputData(
    checkpointId: bigint,
    subpartition: ResultSubpartitionInfo,
    data: readonly NetworkBuffer[],
  ) {
    const key = `${subpartition.partitionIndex}:${subpartition.subpartitionIndex}`;
    this.record(checkpointId, "output", key, data);
  }

  /** Every byte handed over for `checkpointId` and `kind`, in order. */
  bytes(checkpointId: bigint, kind: "input" | "output"): number[] {
    return this.calls
      .filter((call) => call.checkpointId === checkpointId && call.kind === kind)
      .flatMap((call) => call.data.flat());
  }

  private record(
    checkpointId: bigint,
    kind: "input" | "output",
    channel: string,
    data: readonly NetworkBuffer[],
  ): void {
    const copies = data.map((buffer) => {
      const bytes = [...buffer.readableView()];
      buffer.recycleBuffer();
      return bytes;
    });
    this.calls.push({ checkpointId, kind, channel, data: copies });
  }
}
