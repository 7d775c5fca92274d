import {
  type NetworkShuffleDescriptor,
  SHUFFLE_SERVICE_FACTORY_BRAND,
  type ShuffleEnvironmentContext,
  type ShuffleMasterContext,
  type ShuffleServiceFactory,
} from "@sluice/runtime-api";
import type { SingleInputGate } from "../consumer/single-input-gate.js";
import type { Transport } from "../netty/transport/transport.js";
import {
  type NetworkResultPartition,
  NetworkShuffleEnvironment,
} from "./network-shuffle-environment.js";
import { NetworkShuffleMaster } from "./network-shuffle-master.js";

/**
 * The base of the bundled plugins' factories (Flink's NettyShuffleServiceFactory): the same
 * master and environment, with the transport supplied by the subclass (TCP or WebSocket).
 */
export abstract class NetworkShuffleServiceFactory
  implements
    ShuffleServiceFactory<NetworkShuffleDescriptor, NetworkResultPartition, SingleInputGate>
{
  readonly [SHUFFLE_SERVICE_FACTORY_BRAND] = true;

  /** One environment per thread of a threaded task manager, over its shared network memory. */
  readonly supportsTaskSlotThreads = true;

  /** Creates the transport for one environment, from its configuration. */
  protected abstract createTransport(context: ShuffleEnvironmentContext): Transport;

  createShuffleMaster(context: ShuffleMasterContext): NetworkShuffleMaster {
    return new NetworkShuffleMaster(context);
  }

  createShuffleEnvironment(context: ShuffleEnvironmentContext): NetworkShuffleEnvironment {
    return new NetworkShuffleEnvironment(
      context,
      context.localCommunicationOnly ? undefined : this.createTransport(context),
    );
  }
}

/** A factory without a transport: every partition is consumed in the same worker. */
export class LocalShuffleServiceFactory
  implements
    ShuffleServiceFactory<NetworkShuffleDescriptor, NetworkResultPartition, SingleInputGate>
{
  readonly [SHUFFLE_SERVICE_FACTORY_BRAND] = true;

  /** One environment per thread of a threaded task manager, over its shared network memory. */
  readonly supportsTaskSlotThreads = true;

  createShuffleMaster(context: ShuffleMasterContext): NetworkShuffleMaster {
    return new NetworkShuffleMaster(context);
  }

  createShuffleEnvironment(context: ShuffleEnvironmentContext): NetworkShuffleEnvironment {
    return new NetworkShuffleEnvironment(context);
  }
}
