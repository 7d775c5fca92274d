import type { ResultPartitionID } from "@sluice/core";
import {
  NettyShuffleEnvironmentOptions,
  readableConfigOf,
  type TaskEventPublisher,
} from "@sluice/runtime-api";
import type { Backoff, InputChannelOwner } from "../consumer/input-channel.js";
import { LocalInputChannel } from "../consumer/local-input-channel.js";
import { UnknownInputChannel } from "../consumer/unknown-input-channel.js";
import type { ResultPartitionProvider } from "../partition/result-partition-provider.js";

const DEFAULTS = readableConfigOf({});

/**
 * The backoff of the channels built here unless a test gives one: the defaults of
 * `taskmanager.network.request-backoff.initial` and `.max`.
 */
export const DEFAULT_TEST_BACKOFF: Backoff = {
  initialMs: DEFAULTS.get(NettyShuffleEnvironmentOptions.NETWORK_REQUEST_BACKOFF_INITIAL),
  maxMs: DEFAULTS.get(NettyShuffleEnvironmentOptions.NETWORK_REQUEST_BACKOFF_MAX),
};

/** What a test says about an input channel it builds (Flink's InputChannelBuilder). */
export interface InputChannelBuilderOptions {
  /** The gate the channel belongs to (a SingleInputGate). */
  readonly gate: InputChannelOwner;
  /** The producer's partition the channel reads. */
  readonly partitionId: ResultPartitionID;
  /** The channel's index in its gate. Default 0. */
  readonly channelIndex?: number;
  /** The subpartition it reads. Default 0. */
  readonly subpartitionIndex?: number;
  /** Default {@link DEFAULT_TEST_BACKOFF}. */
  readonly backoff?: Backoff;
}

/**
 * A LocalInputChannel reading `partitionId` from `partitionManager` (a ResultPartitionManager of
 * the same thread, or the provider of a slot thread, which also reads other slots' partitions).
 */
export function buildLocalInputChannel(
  options: InputChannelBuilderOptions & {
    readonly partitionManager: ResultPartitionProvider;
    /** Where task events the channel sends go. Default: none. */
    readonly taskEventPublisher?: TaskEventPublisher;
  },
): LocalInputChannel {
  return new LocalInputChannel(
    options.gate,
    options.channelIndex ?? 0,
    options.partitionId,
    options.subpartitionIndex ?? 0,
    options.partitionManager,
    options.backoff ?? DEFAULT_TEST_BACKOFF,
    options.taskEventPublisher,
  );
}

/** An UnknownInputChannel: the producer's location is not known yet. */
export function buildUnknownInputChannel(options: InputChannelBuilderOptions): UnknownInputChannel {
  return new UnknownInputChannel(
    options.gate,
    options.channelIndex ?? 0,
    options.partitionId,
    options.subpartitionIndex ?? 0,
    options.backoff ?? DEFAULT_TEST_BACKOFF,
  );
}
