import {
  AVAILABLE,
  CancelCheckpointMarker,
  CheckpointAlignment,
  CheckpointBarrier,
  DEFAULT_CHECKPOINT_OPTIONS,
  EndOfPartitionEvent,
  EventAnnouncement,
  FreeingBufferRecycler,
  IllegalStateError,
  MemorySegment,
  NetworkBuffer,
  needsAlignment,
  type RuntimeEvent,
  type TaskEvent,
} from "@sluice/core";
import type { BufferOrEvent, InputGate, InputGateMetrics } from "@sluice/runtime-api";

/** One scripted item: a data buffer of `size` bytes or an event, on `channel`. */
export interface ScriptedItem {
  readonly channel: number;
  readonly size?: number;
  readonly event?: RuntimeEvent;
}

/** A data buffer item. */
export function buffer(channel: number, size = 1): ScriptedItem {
  return { channel, size };
}

/** An aligned (exactly-once) barrier item. */
export function barrier(id: number, channel: number, timestamp = BigInt(Date.now())): ScriptedItem {
  return { channel, event: new CheckpointBarrier(BigInt(id), timestamp) };
}

const AT_LEAST_ONCE = {
  ...DEFAULT_CHECKPOINT_OPTIONS,
  alignment: CheckpointAlignment.AT_LEAST_ONCE,
};

/** An at-least-once barrier item (does not block its channel). */
export function trackedBarrier(
  id: number,
  channel: number,
  timestamp = BigInt(Date.now()),
): ScriptedItem {
  return { channel, event: new CheckpointBarrier(BigInt(id), timestamp, AT_LEAST_ONCE) };
}

/** An unaligned barrier item (a priority event that blocks nothing). */
export function unalignedBarrier(
  id: number,
  channel: number,
  timestamp = BigInt(Date.now()),
): ScriptedItem {
  const options = { ...DEFAULT_CHECKPOINT_OPTIONS, alignment: CheckpointAlignment.UNALIGNED };
  return { channel, event: new CheckpointBarrier(BigInt(id), timestamp, options) };
}

/** A timeoutable aligned barrier (blocks its channel; may turn unaligned after `timeoutMs`). */
export function timeoutableBarrier(
  id: number,
  channel: number,
  timeoutMs: number,
  timestamp = BigInt(Date.now()),
): ScriptedItem {
  const options = { ...DEFAULT_CHECKPOINT_OPTIONS, alignedCheckpointTimeout: BigInt(timeoutMs) };
  return { channel, event: new CheckpointBarrier(BigInt(id), timestamp, options) };
}

/** The announcement of a timeoutable barrier still queued as buffer `sequenceNumber`. */
export function announcement(
  id: number,
  channel: number,
  sequenceNumber: number,
  timeoutMs: number,
  timestamp = BigInt(Date.now()),
): ScriptedItem {
  const barrierItem = timeoutableBarrier(id, channel, timeoutMs, timestamp);
  return {
    channel,
    event: new EventAnnouncement(barrierItem.event as CheckpointBarrier, sequenceNumber),
  };
}

/** A cancellation marker item. */
export function cancel(id: number, channel: number): ScriptedItem {
  return { channel, event: new CancelCheckpointMarker(BigInt(id)) };
}

/** An EndOfPartition item. */
export function endOfPartition(channel: number): ScriptedItem {
  return { channel, event: EndOfPartitionEvent.INSTANCE };
}

/**
 * An InputGate that hands out a fixed sequence (like Flink's MockInputGate), while behaving like
 * a producer that honours aligned barriers: a channel is blocked from the moment its aligned
 * barrier is handed out until `resumeConsumption`. Handing out an item of a blocked channel, or
 * resuming a channel that is not blocked, throws: either would be a broken alignment.
 */
export class ScriptedInputGate implements InputGate {
  readonly numberOfInputChannels: number;
  readonly metrics: InputGateMetrics = {
    numBytesIn: 0,
    numBuffersIn: 0,
    inPoolUsage: () => 0,
  };
  private readonly items: ScriptedItem[];
  private readonly blocked = new Set<number>();
  private readonly ended = new Set<number>();
  /** Every buffer handed out, so tests can recycle them. */
  readonly handedOut: NetworkBuffer[] = [];
  resumes = 0;
  /** Announced barriers moved ahead of their data: `channel:sequence`. */
  readonly conversions: string[] = [];

  constructor(numberOfInputChannels: number, items: readonly ScriptedItem[] = []) {
    this.numberOfInputChannels = numberOfInputChannels;
    this.items = [...items];
  }

  /** Appends more items. */
  add(...items: ScriptedItem[]): void {
    this.items.push(...items);
  }

  /** Channels currently held by an aligned barrier. */
  getBlockedChannels(): number[] {
    return [...this.blocked].sort((a, b) => a - b);
  }

  setup(): void {}
  requestPartitions(): void {}

  pollNext(): BufferOrEvent | undefined {
    const item = this.items.shift();
    if (item === undefined) return undefined;
    if (this.blocked.has(item.channel)) {
      throw new IllegalStateError(`channel ${item.channel} is blocked by its aligned barrier`);
    }
    const moreAvailable = this.items.length > 0;
    if (item.event === undefined) {
      const size = item.size ?? 1;
      const segment = MemorySegment.allocateUnpooled(Math.max(size, 1));
      const data = new NetworkBuffer(segment, FreeingBufferRecycler);
      data.setSize(size);
      this.handedOut.push(data);
      return { channelIndex: item.channel, buffer: data, moreAvailable, size };
    }
    if (item.event.kind === "CheckpointBarrier" && needsAlignment(item.event.options)) {
      this.blocked.add(item.channel);
    }
    if (item.event.kind === "EndOfPartition") this.ended.add(item.channel);
    return { channelIndex: item.channel, event: item.event, moreAvailable, size: 0 };
  }

  isFinished(): boolean {
    return this.ended.size === this.numberOfInputChannels && this.items.length === 0;
  }

  isAvailable(): boolean {
    return this.items.length > 0 || this.isFinished();
  }

  getAvailableFuture(): Promise<void> {
    return AVAILABLE;
  }

  resumeConsumption(channelIndex: number): void {
    if (!this.blocked.delete(channelIndex)) {
      throw new IllegalStateError(
        `resumeConsumption of channel ${channelIndex}, which is not blocked`,
      );
    }
    this.resumes++;
  }

  /** Records the conversion; the test scripts where the barrier then comes. */
  convertToPriorityEvent(channelIndex: number, sequenceNumber: number): void {
    this.conversions.push(`${channelIndex}:${sequenceNumber}`);
  }

  sendTaskEvent(_event: TaskEvent): void {}

  async close(): Promise<void> {
    for (const data of this.handedOut.splice(0)) {
      if (!data.isRecycled()) data.recycleBuffer();
    }
  }
}
