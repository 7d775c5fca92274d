/** A gate's received bytes and buffers by channel kind; see `SingleInputGate.getInputCounts`. */
export interface InputCounts {
  /** Bytes (data and events) read through local channels. */
  readonly numBytesInLocal: number;
  /** Bytes (data and events) received through remote channels. */
  readonly numBytesInRemote: number;
  /** Data buffers read through local channels. */
  readonly numBuffersInLocal: number;
  /** Data buffers received through remote channels. */
  readonly numBuffersInRemote: number;
}

/**
 * What a gate counts of its input (Flink's `numBytesIn` / `numBuffersIn` and the local/remote
 * split of `InputChannelMetrics`): the totals and, for each, where it came from.
 */
export class InputCounters implements InputCounts {
  numBytesIn = 0;
  numBuffersIn = 0;
  numBytesInLocal = 0;
  numBytesInRemote = 0;
  numBuffersInLocal = 0;
  numBuffersInRemote = 0;

  /** `size` bytes (a buffer or an event) came through a local or a remote channel. */
  countBytes(size: number, local: boolean): void {
    this.numBytesIn += size;
    if (local) this.numBytesInLocal += size;
    else this.numBytesInRemote += size;
  }

  /** A data buffer came through a local or a remote channel. */
  countBuffer(local: boolean): void {
    this.numBuffersIn++;
    if (local) this.numBuffersInLocal++;
    else this.numBuffersInRemote++;
  }

  /** The local/remote split as it is now. */
  snapshot(): InputCounts {
    return {
      numBytesInLocal: this.numBytesInLocal,
      numBytesInRemote: this.numBytesInRemote,
      numBuffersInLocal: this.numBuffersInLocal,
      numBuffersInRemote: this.numBuffersInRemote,
    };
  }
}
