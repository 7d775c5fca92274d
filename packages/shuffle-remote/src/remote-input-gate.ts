import {
  AVAILABLE,
  AvailabilityHelper,
  anyOf,
  ErrorCodes,
  IllegalStateError,
  isPartitionException,
  PartitionConnectionError,
  PartitionFileCorruptedError,
  PartitionNotFoundError,
  type ResultPartitionID,
  type TaskEvent,
} from "@sluice/core";
import type { SingleInputGate } from "@sluice/network/plugin";
import type { BufferOrEvent, InputGate, InputGateMetrics } from "@sluice/runtime-api";
import {
  describeWorker,
  type PartitionAccess,
  type ShuffleWorkerAddress,
} from "./remote-shuffle-descriptor.js";
import { describeChecksum, SubpartitionChecksum } from "./subpartition-checksum.js";
import type { WorkerStatClient } from "./worker-stat-client.js";

/** What one channel of a gate reads: a subpartition of a partition, and where it is stored. */
export interface RemoteChannelSlot {
  /** The consumed partition (data set + number), whichever producer attempt wrote it. */
  readonly partitionKey: string;
  readonly subpartition: number;
  /** The producer attempt's partition and its worker; unset until the producer is known. */
  partitionId: ResultPartitionID | undefined;
  worker: ShuffleWorkerAddress | undefined;
  /** The job and access token the checksum query shows the worker. */
  access: PartitionAccess | undefined;
}

/**
 * The consumer side of partitions stored on shuffle workers: the network shuffle's gate reads
 * them (credit-based, from each worker's data port), and this gate checks each channel's stream
 * at its end. The worker checks every stored buffer's CRC32 before sending it, so a byte that
 * changed on disk never reaches the consumer (its channel fails with
 * `SLUICE_ERR_PARTITION_FILE_CORRUPTED`, which this gate names with the worker). End to end, when
 * a channel's EndOfPartition arrives the gate asks the worker for the CRC32 and byte count the
 * producer wrote, and hands the event on only when they equal what was read and the worker is
 * still the incarnation the descriptor names. Otherwise the gate fails:
 * `SLUICE_ERR_PARTITION_FILE_CORRUPTED` for a mismatch, `SLUICE_ERR_PARTITION_NOT_FOUND` for a
 * worker that restarted or no longer stores the partition — both naming partition and worker, so
 * the job side re-runs the producer. The gate stays opaque: the host sees only the SPI.
 */
export class RemoteInputGate implements InputGate {
  private readonly checksums: SubpartitionChecksum[];
  private readonly verified: BufferOrEvent[] = [];
  private readonly local = new AvailabilityHelper();
  private verifying = 0;
  private failure: Error | undefined;

  /** @internal Created by `RemoteShuffleEnvironment.createInputGates`. */
  constructor(
    readonly inner: SingleInputGate,
    private readonly slots: readonly RemoteChannelSlot[],
    private readonly stat: WorkerStatClient,
    private readonly ownerName: string,
  ) {
    this.checksums = slots.map(() => new SubpartitionChecksum());
  }

  get numberOfInputChannels(): number {
    return this.inner.numberOfInputChannels;
  }

  get metrics(): InputGateMetrics {
    return this.inner.metrics;
  }

  /** The producer of a partition this gate waits for is known now (`updatePartitionInfo`). */
  onPartitionKnown(
    partitionId: ResultPartitionID,
    worker: ShuffleWorkerAddress,
    access: PartitionAccess,
  ): void {
    const key = partitionId.partitionId.toString();
    for (const slot of this.slots) {
      if (slot.partitionKey !== key) continue;
      slot.partitionId = partitionId;
      slot.worker = worker;
      slot.access = access;
    }
  }

  setup(): void {
    this.inner.setup();
  }

  requestPartitions(): void {
    this.inner.requestPartitions();
  }

  pollNext(): BufferOrEvent | undefined {
    if (this.failure !== undefined) throw this.failure;
    const ready = this.verified.shift();
    if (ready !== undefined) {
      return { ...ready, moreAvailable: this.verified.length > 0 || this.inner.isAvailable() };
    }
    let item: BufferOrEvent | undefined;
    try {
      item = this.inner.pollNext();
    } catch (error) {
      this.fail(this.namingPartitions(error as Error));
      throw this.failure;
    }
    if (item === undefined) return undefined;
    if (item.buffer !== undefined) {
      this.checksums[item.channelIndex]?.update(item.buffer.readableView());
      return item;
    }
    if (item.event?.kind === "EndOfPartition") {
      this.verify(item);
      return undefined;
    }
    return item;
  }

  isFinished(): boolean {
    return (
      this.failure === undefined &&
      this.verifying === 0 &&
      this.verified.length === 0 &&
      this.inner.isFinished()
    );
  }

  isAvailable(): boolean {
    return (
      this.failure !== undefined ||
      this.verified.length > 0 ||
      (this.verifying === 0 && this.inner.isFinished()) ||
      (this.inner.isAvailable() && !this.inner.isFinished())
    );
  }

  getAvailableFuture(): Promise<void> {
    if (this.isAvailable()) return AVAILABLE;
    this.local.resetUnavailable();
    return this.inner.isFinished()
      ? this.local.getAvailableFuture()
      : anyOf([this.inner.getAvailableFuture(), this.local.getAvailableFuture()]);
  }

  resumeConsumption(channelIndex: number): void {
    this.inner.resumeConsumption(channelIndex);
  }

  sendTaskEvent(event: TaskEvent): void {
    this.inner.sendTaskEvent(event);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  getFailureCause(): Error | undefined {
    return this.failure ?? this.inner.getFailureCause();
  }

  /** Checks the stream of the channel that delivered `end`, then hands `end` on. */
  private verify(end: BufferOrEvent): void {
    const slot = this.slots[end.channelIndex];
    const read = this.checksums[end.channelIndex];
    if (slot?.partitionId === undefined || slot.worker === undefined || read === undefined) {
      this.fail(
        new IllegalStateError(
          `${this.ownerName}: channel ${end.channelIndex} ended before its producer was known`,
        ),
      );
      return;
    }
    const { partitionId, worker, subpartition, access } = slot;
    const where = `${partitionId} subpartition ${subpartition} on ${describeWorker(worker)}`;
    if (access === undefined) {
      this.fail(
        new IllegalStateError(`${this.ownerName}: ${where}: the descriptor carried no access`),
      );
      return;
    }
    this.verifying++;
    this.stat.query(worker, partitionId, subpartition, access).then(
      (expected) => {
        this.verifying--;
        if (!read.matches(expected)) {
          this.fail(
            new PartitionFileCorruptedError(
              `${this.ownerName}: ${where}: read ${describeChecksum(read.toJSON())}, but the producer wrote ${describeChecksum(expected)}`,
              { partitionId },
            ),
          );
          return;
        }
        this.verified.push(end);
        this.local.resetAvailable();
      },
      (error: unknown) => {
        this.verifying--;
        const cause = error as Error;
        if ((cause as { code?: string }).code === ErrorCodes.PARTITION_NOT_FOUND) {
          // A later start of the worker, or the partition is gone from it.
          this.fail(
            new PartitionNotFoundError(`${this.ownerName}: ${where}: ${cause.message}`, {
              cause,
              partitionId,
            }),
          );
          return;
        }
        this.fail(
          new PartitionConnectionError(
            `${this.ownerName}: ${where}: could not check the partition's checksum: ${cause.message}`,
            { cause, partitionId },
          ),
        );
      },
    );
  }

  /**
   * A connection to a worker failed: the network gate's error names the address, this one also
   * the partitions read from there (so the producers that re-run are known), as a
   * `SLUICE_ERR_PARTITION_CONNECTION`. Other errors pass unchanged.
   */
  private namingPartitions(error: Error): Error {
    const code = (error as { code?: string }).code;
    if (code === ErrorCodes.PARTITION_FILE_CORRUPTED && isPartitionException(error)) {
      // The worker found its stored file damaged before sending the buffer: say which worker.
      const key = error.partitionId.toString();
      const slot = this.slots.find((s) => s.partitionId?.toString() === key);
      if (slot?.worker === undefined) return error;
      return new PartitionFileCorruptedError(
        `${this.ownerName}: ${key} on ${describeWorker(slot.worker)}: ${error.message}`,
        { cause: error, partitionId: error.partitionId },
      );
    }
    if (
      code !== ErrorCodes.REMOTE_TRANSPORT &&
      code !== ErrorCodes.LOCAL_TRANSPORT &&
      code !== ErrorCodes.PARTITION_CONNECTION
    ) {
      return error;
    }
    const known = this.slots.filter((slot) => slot.worker !== undefined);
    const there = known.filter((slot) =>
      error.message.includes(`${slot.worker?.host}:${slot.worker?.dataPort}`),
    );
    const named = new Map<string, string>();
    for (const slot of there.length > 0 ? there : known) {
      if (slot.partitionId === undefined || slot.worker === undefined) continue;
      named.set(slot.partitionId.toString(), describeWorker(slot.worker));
    }
    if (named.size === 0) return error;
    const what = [...named].map(([partition, worker]) => `${partition} on ${worker}`).join(", ");
    // The channel's own partition when the network gate named it, else the first one lost.
    const partitionId = isPartitionException(error)
      ? error.partitionId
      : (there[0] ?? known[0])?.partitionId;
    return new PartitionConnectionError(`${this.ownerName}: lost ${what}: ${error.message}`, {
      cause: error,
      ...(partitionId === undefined ? {} : { partitionId }),
    });
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.local.resetAvailable();
  }
}
