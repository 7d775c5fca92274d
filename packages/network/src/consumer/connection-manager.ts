import type { ConnectionID } from "./connection-id.js";
import type { PartitionRequestClient } from "./partition-request-client.js";
import type { RemoteInputChannel } from "./remote-input-channel.js";

/**
 * Where a {@link RemoteInputChannel} gets the client for its producer's connection (the part of
 * Flink's ConnectionManager a channel uses). Channels with equal {@link ConnectionID}s share one
 * client.
 */
export interface ConnectionManager {
  /**
   * The client of the connection `connectionId` names, connecting first when there is none;
   * rejects with a PartitionConnectionError when the producer cannot be reached.
   */
  createPartitionRequestClient(connectionId: ConnectionID): Promise<PartitionRequestClient>;
}
