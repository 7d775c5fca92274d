import type { JobID } from "@sluice/core";
import type { PartitionDescriptor } from "../descriptors/partition-descriptor.js";
import type { ProducerDescriptor } from "../descriptors/producer-descriptor.js";
import type { ShuffleDescriptor } from "../descriptors/shuffle-descriptor.js";
import type { TaskInputsOutputsDescriptor } from "../descriptors/task-inputs-outputs-descriptor.js";
import type { JobShuffleContext } from "./contexts.js";
import type { ShuffleMaster } from "./shuffle-master.js";

/**
 * A {@link ShuffleMaster} that forwards every call to another one, the base of a decorator
 * (metrics, logging, fault injection): a subclass overrides only the members it changes and calls
 * `super` to reach the wrapped master. Every member of the SPI is forwarded, so a wrapper never
 * needs a `Proxy`. Each method calls the wrapped master's, with it as `this`, and returns what it
 * returned (nothing, for the `void` members).
 *
 * @typeParam SD the wrapped plugin's descriptor type.
 */
export class ForwardingShuffleMaster<SD extends ShuffleDescriptor = ShuffleDescriptor>
  implements ShuffleMaster<SD>
{
  /** @param delegate the master every call goes to. */
  constructor(protected readonly delegate: ShuffleMaster<SD>) {}

  /** Starts the wrapped master; see {@link ShuffleMaster.start}. */
  start(): Promise<void> {
    return this.delegate.start();
  }

  /** Closes the wrapped master; see {@link ShuffleMaster.close}. */
  close(): Promise<void> {
    return this.delegate.close();
  }

  /** Registers the job with the wrapped master; see {@link ShuffleMaster.registerJob}. */
  registerJob(context: JobShuffleContext): void {
    this.delegate.registerJob(context);
  }

  /** Unregisters the job from the wrapped master; see {@link ShuffleMaster.unregisterJob}. */
  unregisterJob(jobId: JobID): void {
    this.delegate.unregisterJob(jobId);
  }

  /**
   * Registers the partition with the wrapped master and returns its descriptor; see
   * {@link ShuffleMaster.registerPartitionWithProducer}.
   */
  registerPartitionWithProducer(
    jobId: JobID,
    partitionDescriptor: PartitionDescriptor,
    producerDescriptor: ProducerDescriptor,
  ): Promise<SD> {
    return this.delegate.registerPartitionWithProducer(
      jobId,
      partitionDescriptor,
      producerDescriptor,
    );
  }

  /**
   * Has the wrapped master free the partition's external resources; see
   * {@link ShuffleMaster.releasePartitionExternally}.
   */
  releasePartitionExternally(shuffleDescriptor: SD): void {
    this.delegate.releasePartitionExternally(shuffleDescriptor);
  }

  /**
   * Where the wrapped master serves the shuffle's own processes, if it does; see
   * {@link ShuffleMaster.getAdvertisedAddress}.
   */
  getAdvertisedAddress(): string | undefined {
    return this.delegate.getAdvertisedAddress?.();
  }

  /**
   * The network memory the wrapped master computes for the task; see
   * {@link ShuffleMaster.computeShuffleMemorySizeForTask}.
   */
  computeShuffleMemorySizeForTask(descriptor: TaskInputsOutputsDescriptor): number {
    return this.delegate.computeShuffleMemorySizeForTask(descriptor);
  }
}
