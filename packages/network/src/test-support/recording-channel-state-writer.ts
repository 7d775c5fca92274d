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

/** One addOutputDataFuture call: whether its promise settled, and how. */
export interface RecordedOutputFuture {
  readonly checkpointId: bigint;
  /** `partition:subpartition`. */
  readonly channel: string;
  settled: boolean;
  /** Set when the promise rejected. */
  error?: unknown;
}

/**
 * A ChannelStateWriter for this package's tests (the runtime has the real one): records what
 * channels and subpartitions hand over, copying the bytes and recycling every buffer as the
 * contract requires.
 */
export class RecordingChannelStateWriter implements ChannelStateWriter {
  readonly calls: RecordedChannelState[] = [];
  readonly futures: RecordedOutputFuture[] = [];

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

  /** Records the future; once it resolves, its buffers as an output call. */
  addOutputDataFuture(
    checkpointId: bigint,
    subpartition: ResultSubpartitionInfo,
    data: Promise<readonly NetworkBuffer[]>,
  ) {
    const channel = `${subpartition.partitionIndex}:${subpartition.subpartitionIndex}`;
    const future: RecordedOutputFuture = { checkpointId, channel, settled: false };
    this.futures.push(future);
    data.then(
      (buffers) => {
        future.settled = true;
        this.record(checkpointId, "output", channel, buffers);
      },
      (error: unknown) => {
        future.settled = true;
        future.error = error;
      },
    );
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
