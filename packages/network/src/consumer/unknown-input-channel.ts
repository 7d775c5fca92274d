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

  sendTaskEvent(_event: TaskEvent): void {
    throw new IllegalStateError(`${this}: cannot send a task event before the producer is known`);
  }

  isReleased(): boolean {
    return this.released;
  }

  releaseAllResources(): void {
    this.released = true;
  }
}
