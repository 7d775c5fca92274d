import {
  AVAILABLE,
  anyOf,
  EndOfChannelStateEvent,
  IllegalArgumentError,
  IllegalStateError,
} from "@sluice/core";
import type { BufferOrEvent, InputChannelInfo, InputGate } from "@sluice/runtime-api";
import type { CheckpointBarrierHandler } from "./checkpoint-barrier-handler.js";
import { RecoveredInputChannel } from "./recovered-input-channel.js";
import type { InputChannelStateHandle } from "./task-channel-state.js";

/** What a poll returns for an announcement: handled, nothing to hand on. */
const ANNOUNCEMENT = Symbol("announcement");

/**
 * One input of a task with checkpointing (Flink's CheckpointedInputGate over a UnionInputGate):
 * reads one or more input gates fairly, passes every barrier, cancellation marker and
 * EndOfPartition to the task's barrier handler before handing it on, and counts data bytes for
 * the alignment metrics. A task with several inputs creates one per input, all sharing the one
 * handler, so a checkpoint aligns across every gate of the task.
 *
 * The channels of its gates are numbered one after the other (the first gate's channels first),
 * so it can be read like a single gate, e.g. by a `RecordReader`. Everything is handed on,
 * events included, in the order the channels delivered them; a channel held by an aligned
 * barrier simply delivers nothing until the handler resumes it.
 *
 * EndOfData is acknowledged to its channel's producer as soon as it is polled (Flink's
 * AckAllUserRecordsProcessed), as every record before it was handed out by then.
 *
 * Priority: a gate with a priority event (an unaligned barrier, an announcement) is polled
 * before the others, and {@link hasPriorityEvent} lets a back-pressured task take such events
 * while it reads no data. Announcements go to the handler and are not handed on. A timed-out
 * alignment turns unaligned at the start of a poll. After a restore from an unaligned
 * checkpoint, the recovered in-flight input ({@link setRecoveredState}) is handed out before
 * anything the gates deliver.
 */
export class CheckpointedInputGate {
  /** Channels over all wrapped gates. */
  readonly numberOfInputChannels: number;
  private readonly gates: readonly InputGate[];
  private readonly handler: CheckpointBarrierHandler;
  /** Index of each wrapped gate in the handler's inputs. */
  private readonly gateIndexes: number[];
  /** First flat channel index of each wrapped gate. */
  private readonly channelOffsets: number[];
  /** Where the next poll starts, so every gate gets its turn. */
  private nextGate = 0;
  /** Recovered channels still replaying, by flat channel index. */
  private recovered: RecoveredInputChannel[] = [];
  private polled = false;

  /**
   * @param gates the gates of this input, each also listed in `handler.getInputs()`.
   * @param handler the task's barrier handler (shared by all inputs of the task).
   */
  constructor(gates: readonly InputGate[], handler: CheckpointBarrierHandler) {
    if (gates.length === 0) {
      throw new IllegalArgumentError("a CheckpointedInputGate needs at least one input gate");
    }
    const inputs = handler.getInputs();
    this.gates = gates;
    this.handler = handler;
    this.gateIndexes = [];
    this.channelOffsets = [];
    let channels = 0;
    for (const gate of gates) {
      const index = inputs.indexOf(gate);
      if (index < 0) {
        throw new IllegalArgumentError(
          `${handler.taskName}: a gate of this input is not among the barrier handler's inputs`,
        );
      }
      this.gateIndexes.push(index);
      this.channelOffsets.push(channels);
      channels += gate.numberOfInputChannels;
    }
    this.numberOfInputChannels = channels;
  }

  /**
   * The recovered in-flight input of this input's channels (named by the handler's gate index),
   * replayed before any live data. Call before the first poll.
   *
   * @throws IllegalStateError after the first poll; IllegalArgumentError for a channel that is
   *   not part of this input.
   */
  setRecoveredState(handles: readonly InputChannelStateHandle[]): void {
    if (this.polled) {
      throw new IllegalStateError(
        `${this.handler.taskName}: recovered channel state must be set before the input is read`,
      );
    }
    for (const handle of handles) {
      const local = this.gateIndexes.indexOf(handle.info.gateIndex);
      const gate = this.gates[local];
      if (gate === undefined || handle.info.channelIndex >= gate.numberOfInputChannels) {
        continue; // another input's channel
      }
      this.recovered.push(new RecoveredInputChannel(handle.info, handle.data));
    }
  }

  /** The next recovered buffer, or undefined once every recovered channel ended. */
  private pollRecovered(): BufferOrEvent | undefined {
    while (this.recovered.length > 0) {
      const channel = this.recovered[0] as RecoveredInputChannel;
      const next = channel.getNext();
      if (next === undefined || next instanceof EndOfChannelStateEvent) {
        // EndOfChannelStateEvent: this channel's live data may follow now.
        this.recovered.shift();
        continue;
      }
      const info = channel.channelInfo;
      const local = this.gateIndexes.indexOf(info.gateIndex);
      return {
        channelIndex: (this.channelOffsets[local] as number) + info.channelIndex,
        buffer: next,
        moreAvailable: true,
        size: next.getSize(),
      };
    }
    return undefined;
  }

  /**
   * True when a gate has a priority event next, or a timed-out alignment waits: what a
   * back-pressured task still reads.
   */
  hasPriorityEvent(): boolean {
    if (this.handler.hasPendingAlignmentTimeout()) return true;
    for (const gate of this.gates) if (gate.hasPriorityEvent?.() === true) return true;
    return false;
  }

  /** Resolves once {@link hasPriorityEvent} may be true. */
  getPriorityEventAvailableFuture(): Promise<void> {
    if (this.hasPriorityEvent()) return AVAILABLE;
    const futures: Promise<void>[] = [this.handler.getAlignmentTimeoutFuture()];
    for (const gate of this.gates) {
      const future = gate.getPriorityEventAvailableFuture?.();
      if (future !== undefined) futures.push(future);
    }
    return anyOf(futures);
  }

  /** The barrier handler this input reports to. */
  getCheckpointBarrierHandler(): CheckpointBarrierHandler {
    return this.handler;
  }

  /**
   * The next buffer or event of any gate, or `undefined` when none has one now. Checkpoint events
   * and EndOfPartition reach the handler before they are returned, so a triggered checkpoint
   * sees exactly the records before the barrier. `channelIndex` is the flat index over all gates
   * of this input ({@link getChannelInfo} names the gate). Data buffers are owned by the caller.
   *
   * @throws a gate's failure, or the error of the handler or of the task's checkpoint callbacks.
   */
  pollNext(): BufferOrEvent | undefined {
    this.polled = true;
    if (this.recovered.length > 0) {
      const recovered = this.pollRecovered();
      if (recovered !== undefined) return recovered;
    }
    this.handler.checkAlignmentTimeout();
    const count = this.gates.length;
    const first = this.firstPriorityGate();
    for (let i = 0; i < count; i++) {
      const index = i === 0 && first >= 0 ? first : (this.nextGate + i) % count;
      const next = this.pollGate(index);
      if (next === ANNOUNCEMENT) return this.pollNext();
      if (next !== undefined) return next;
    }
    return undefined;
  }

  /**
   * The next priority event (an unaligned barrier, a barrier moved ahead by a timed-out
   * alignment), or `undefined` when no gate has one; announcements are handled on the way. A
   * reader calls it between two records of a buffer it is still reading (Flink's
   * `processPriorityEvents`): the checkpoint then takes the rest of that buffer as channel state.
   * Before the recovered input is replayed, there is nothing to take.
   */
  pollPriorityEvent(): BufferOrEvent | undefined {
    if (this.recovered.length > 0) return undefined;
    this.polled = true;
    this.handler.checkAlignmentTimeout();
    for (;;) {
      const first = this.firstPriorityGate();
      if (first < 0) return undefined;
      const next = this.pollGate(first);
      if (next === ANNOUNCEMENT) continue;
      if (next?.buffer !== undefined) {
        next.buffer.recycleBuffer();
        throw new IllegalStateError(
          `${this.handler.taskName}: gate ${this.gateIndexes[first]} announced a priority event but handed out data`,
        );
      }
      return next;
    }
  }

  /** Polls gate `index` and passes what it returns through the handler. */
  private pollGate(index: number): BufferOrEvent | typeof ANNOUNCEMENT | undefined {
    const gate = this.gates[index] as InputGate;
    const next = gate.pollNext();
    if (next === undefined) return undefined;
    this.nextGate = (index + 1) % this.gates.length;
    const channel: InputChannelInfo = {
      gateIndex: this.gateIndexes[index] as number,
      channelIndex: next.channelIndex,
    };
    const event = next.event;
    if (event === undefined) {
      this.handler.addProcessedBytes(next.size);
    } else if (event.kind === "CheckpointBarrier") {
      this.handler.processBarrier(event, channel);
    } else if (event.kind === "CancelCheckpointMarker") {
      this.handler.processCancellationBarrier(event, channel);
    } else if (event.kind === "EndOfPartition") {
      this.handler.processEndOfPartition(channel);
    } else if (event.kind === "EndOfData") {
      // The reader polls the gate only once it handed every record of its buffer to the task's
      // code, so every record of this channel was processed: its producer may finish.
      gate.acknowledgeAllRecordsProcessed?.(next.channelIndex);
    } else if (event.kind === "EventAnnouncement") {
      const announced = event.announcedEvent;
      if (announced.kind === "CheckpointBarrier") {
        this.handler.processBarrierAnnouncement(announced, event.sequenceNumber, channel);
      }
      // Only the handler cares (the announced barrier itself comes later): read on.
      return ANNOUNCEMENT;
    }
    return {
      ...next,
      channelIndex: (this.channelOffsets[index] as number) + next.channelIndex,
      moreAvailable: next.moreAvailable || this.anyOtherAvailable(index),
    };
  }

  /** Index of a gate with a priority event next, or -1. */
  private firstPriorityGate(): number {
    for (let i = 0; i < this.gates.length; i++) {
      if ((this.gates[i] as InputGate).hasPriorityEvent?.() === true) return i;
    }
    return -1;
  }

  /** The gate and channel behind a flat channel index of this input. */
  getChannelInfo(channelIndex: number): InputChannelInfo {
    for (let i = this.gates.length - 1; i >= 0; i--) {
      const offset = this.channelOffsets[i] as number;
      if (channelIndex >= offset) {
        const local = channelIndex - offset;
        if (local < (this.gates[i] as InputGate).numberOfInputChannels) {
          return { gateIndex: this.gateIndexes[i] as number, channelIndex: local };
        }
        break;
      }
    }
    throw new IllegalArgumentError(
      `${this.handler.taskName}: no input channel ${channelIndex} in [0, ${this.numberOfInputChannels})`,
    );
  }

  /** True once every gate of this input is finished (and nothing recovered is left). */
  isFinished(): boolean {
    return this.recovered.length === 0 && this.gates.every((gate) => gate.isFinished());
  }

  /**
   * True when some unfinished gate may have something now, or every gate finished. A finished
   * gate stays "available" for ever, so it does not count while others are still open.
   */
  isAvailable(): boolean {
    if (this.recovered.length > 0 || this.handler.hasPendingAlignmentTimeout()) return true;
    let open = false;
    for (const gate of this.gates) {
      if (gate.isFinished()) continue;
      if (gate.isAvailable()) return true;
      open = true;
    }
    return !open;
  }

  /** Resolves when some unfinished gate has something again (at once when all finished). */
  getAvailableFuture(): Promise<void> {
    if (this.isAvailable()) return AVAILABLE;
    return anyOf([
      ...this.gates.filter((gate) => !gate.isFinished()).map((g) => g.getAvailableFuture()),
      this.handler.getAlignmentTimeoutFuture(),
    ]);
  }

  private anyOtherAvailable(index: number): boolean {
    for (let i = 0; i < this.gates.length; i++) {
      const gate = this.gates[i] as InputGate;
      if (i !== index && !gate.isFinished() && gate.isAvailable()) return true;
    }
    return false;
  }
}
