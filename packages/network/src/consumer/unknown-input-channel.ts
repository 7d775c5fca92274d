import { IllegalStateError, type ResultPartitionID, type TaskEvent } from "@sluice/core";
import {
  type Backoff,
  type BufferAndAvailability,
  InputChannel,
  type InputChannelOwner,
} from "./input-channel.js";

/**
 * A placeholder for a channel whose producer has not been deployed yet (Flink's
 * UnknownInputChannel). It yields nothing until `SingleInputGate.updateInputChannel` replaces it
 * with a local or remote channel once the producer's location is known.
 */
export class UnknownInputChannel extends InputChannel {
  private released = false;

  constructor(
    gate: InputChannelOwner,
    channelIndex: number,
    partitionId: ResultPartitionID,
    subpartitionIndex: number,
    backoff: Backoff,
  ) {
    super(gate, channelIndex, partitionId, subpartitionIndex, backoff);
  }

  requestSubpartitions(): void {
    // Nothing to request until the producer's location is known.
  }

  getNextBuffer(): BufferAndAvailability | undefined {
    this.checkError();
    return undefined;
  }

  resumeConsumption(): void {
    throw new IllegalStateError(
      `${this}: resumeConsumption on a channel whose producer is unknown`,
    );
  }

  acknowledgeAllRecordsProcessed(): void {
    throw new IllegalStateError(
      `${this}: acknowledgeAllRecordsProcessed on a channel whose producer is unknown (it cannot have delivered EndOfData)`,
    );
  }

  /** Nothing to send to yet: the gate keeps the event and replays it to the known channel. */
  sendTaskEvent(_event: TaskEvent): void {}

  isReleased(): boolean {
    return this.released;
  }

  releaseAllResources(): void {
    this.released = true;
  }
}
