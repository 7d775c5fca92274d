import { AVAILABLE, anyOf, IllegalArgumentError } from "@sluice/core";
import type { BufferOrEvent, InputChannelInfo, InputGate } from "@sluice/runtime-api";
import type { CheckpointBarrierHandler } from "./checkpoint-barrier-handler.js";

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
    const count = this.gates.length;
    for (let i = 0; i < count; i++) {
      const index = (this.nextGate + i) % count;
      const gate = this.gates[index] as InputGate;
      const next = gate.pollNext();
      if (next === undefined) continue;
      this.nextGate = (index + 1) % count;
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
      }
      const item: BufferOrEvent = {
        ...next,
        channelIndex: (this.channelOffsets[index] as number) + next.channelIndex,
        moreAvailable: next.moreAvailable || this.anyOtherAvailable(index),
      };
      return item;
    }
    return undefined;
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

  /** True once every gate of this input is finished. */
  isFinished(): boolean {
    return this.gates.every((gate) => gate.isFinished());
  }

  /**
   * True when some unfinished gate may have something now, or every gate finished. A finished
   * gate stays "available" for ever, so it does not count while others are still open.
   */
  isAvailable(): boolean {
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
    return anyOf(
      this.gates.filter((gate) => !gate.isFinished()).map((g) => g.getAvailableFuture()),
    );
  }

  private anyOtherAvailable(index: number): boolean {
    for (let i = 0; i < this.gates.length; i++) {
      const gate = this.gates[i] as InputGate;
      if (i !== index && !gate.isFinished() && gate.isAvailable()) return true;
    }
    return false;
  }
}
