import {
  SHUFFLE_SERVICE_FACTORY_BRAND,
  type ShuffleEnvironmentContext,
  type ShuffleMasterContext,
  type ShuffleServiceFactory,
} from "@sluice/runtime-api";
import type { RemoteInputGate } from "./remote-input-gate.js";
import type { RemoteResultPartitionWriter } from "./remote-result-partition-writer.js";
import type { RemoteShuffleDescriptor } from "./remote-shuffle-descriptor.js";
import { RemoteShuffleEnvironment } from "./remote-shuffle-environment.js";
import { RemoteShuffleMaster } from "./remote-shuffle-master.js";
import { RemoteShuffleOptions } from "./remote-shuffle-options.js";

/**
 * The remote shuffle plugin (`shuffle-service-factory.class: remote`, or
 * `@sluice/shuffle-remote#RemoteShuffleServiceFactory`): BLOCKING partitions are pushed to
 * shuffle workers and read from them, so they outlive the task managers that produced them (as
 * with flink-remote-shuffle and Celeborn). Pipelined partition types are refused.
 */
export class RemoteShuffleServiceFactory
  implements
    ShuffleServiceFactory<RemoteShuffleDescriptor, RemoteResultPartitionWriter, RemoteInputGate>
{
  readonly [SHUFFLE_SERVICE_FACTORY_BRAND] = true;
  readonly configOptions = Object.values(RemoteShuffleOptions);

  createShuffleMaster(context: ShuffleMasterContext): RemoteShuffleMaster {
    return new RemoteShuffleMaster(context);
  }

  createShuffleEnvironment(context: ShuffleEnvironmentContext): RemoteShuffleEnvironment {
    return new RemoteShuffleEnvironment(context);
  }
}
