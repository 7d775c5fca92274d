import { ResourceID, ResultPartitionID } from "@sluice/core";
import { DescriptorError } from "../errors.js";
import {
  type DescriptorCodec,
  defineCodec,
  type JsonFields,
  type JsonObject,
} from "./json-fields.js";

/**
 * Describes where and how consumers read one result partition (Flink's `ShuffleDescriptor`).
 * Created by the `ShuffleMaster` in `registerPartitionWithProducer`, shipped (as JSON, see
 * {@link ShuffleDescriptorCodec}) to the producer inside a `ResultPartitionDeploymentDescriptor`
 * and to every consumer inside an `InputGateDeploymentDescriptor`, and read only by the
 * `ShuffleEnvironment` of the same plugin.
 *
 * Plain, immutable data. A plugin identifies its descriptors by `kind` and may carry its own fields
 * in `plugin` (any JSON object), which survive serialization unchanged.
 */
export interface ShuffleDescriptor {
  /**
   * Which plugin's descriptor this is: `"unknown"` ({@link UnknownShuffleDescriptor}),
   * `"network"` ({@link NetworkShuffleDescriptor}, both bundled plugins), or a third-party
   * plugin's own name.
   */
  readonly kind: string;
  /** The partition described. */
  readonly resultPartitionId: ResultPartitionID;
  /**
   * True only for {@link UnknownShuffleDescriptor}: the producer is not deployed yet, so the
   * consumer's channel waits for `ShuffleEnvironment.updatePartitionInfo`.
   */
  readonly isUnknown: boolean;
  /**
   * The worker whose local resources (memory, disk) hold the partition's data, or `undefined`
   * when the data lives elsewhere (an external shuffle service) or the producer is unknown.
   * Partitions with local resources are freed with `ShuffleEnvironment.releasePartitionsLocally`.
   */
  readonly storesLocalResourcesOn: ResourceID | undefined;
  /** The plugin's own fields (JSON values only), carried through serialization unchanged. */
  readonly plugin?: JsonObject;
}

/**
 * Placeholder for a partition whose producer is not deployed yet (Flink's
 * `UnknownShuffleDescriptor`). Only the partition id is known; the consumer creates an unknown
 * channel and replaces it when `updatePartitionInfo` delivers the real descriptor.
 */
export interface UnknownShuffleDescriptor extends ShuffleDescriptor {
  /** Always `"unknown"`. */
  readonly kind: "unknown";
  /** Always true. */
  readonly isUnknown: true;
  /** Always `undefined`: nothing is known about the producer yet. */
  readonly storesLocalResourcesOn: undefined;
}

/**
 * How a consumer reaches the producer of a network-shuffle partition (Flink's
 * `PartitionConnectionInfo`): a data server address plus a connection index (partitions with the
 * same address and index share one connection), or `local` when producer and consumer run in the
 * same worker and no connection is needed.
 */
export type PartitionConnectionInfo =
  | {
      /** The producer runs in another worker: connect to its data server. */
      readonly kind: "remote";
      /** Host name or IP of the producer's data server (`taskmanager.host`). */
      readonly host: string;
      /** Port of the producer's data server (as returned by `ShuffleEnvironment.start()`). */
      readonly port: number;
      /** Connection index; equal (host, port, index) share a connection. */
      readonly connectionIndex: number;
    }
  | {
      /** The producer runs in the consumer's worker: read its partition in memory. */
      readonly kind: "local";
    };

/**
 * The descriptor of the bundled network shuffle (TCP and WebSocket plugins; Flink's
 * `NettyShuffleDescriptor`): the producer's worker, how to reach it, and the partition.
 * `storesLocalResourcesOn` is always the producer's worker, since the data sits in its memory.
 */
export interface NetworkShuffleDescriptor extends ShuffleDescriptor {
  /** Always `"network"`. */
  readonly kind: "network";
  /** Always false. */
  readonly isUnknown: false;
  /** The producer's worker. */
  readonly producerLocation: ResourceID;
  /** How to reach the producer. */
  readonly connection: PartitionConnectionInfo;
  /** Always `producerLocation`: pipelined data sits in the producer's memory. */
  readonly storesLocalResourcesOn: ResourceID;
}

/** Creates the placeholder descriptor for a partition whose producer is not known yet. */
export function createUnknownShuffleDescriptor(
  resultPartitionId: ResultPartitionID,
): UnknownShuffleDescriptor {
  return Object.freeze({
    kind: "unknown",
    resultPartitionId,
    isUnknown: true,
    storesLocalResourcesOn: undefined,
  });
}

/**
 * Creates a network shuffle descriptor, validating the connection info.
 *
 * @throws DescriptorError when host is empty, the port is not in [1, 65535] or the connection
 *   index is negative.
 */
export function createNetworkShuffleDescriptor(
  resultPartitionId: ResultPartitionID,
  producerLocation: ResourceID,
  connection: PartitionConnectionInfo,
  plugin?: JsonObject,
): NetworkShuffleDescriptor {
  if (connection.kind === "remote") {
    const { host, port, connectionIndex } = connection;
    if (typeof host !== "string" || host === "") {
      throw new DescriptorError(
        `NetworkShuffleDescriptor: connection.host must be a non-empty string, got ${JSON.stringify(host)}`,
      );
    }
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new DescriptorError(
        `NetworkShuffleDescriptor: connection.port must be in [1, 65535], got ${port}`,
      );
    }
    if (!Number.isInteger(connectionIndex) || connectionIndex < 0) {
      throw new DescriptorError(
        `NetworkShuffleDescriptor: connection.connectionIndex must be an integer >= 0, got ${connectionIndex}`,
      );
    }
  } else if (connection.kind !== "local") {
    throw new DescriptorError(
      `NetworkShuffleDescriptor: connection.kind must be "remote" or "local", got ${JSON.stringify((connection as { kind: unknown }).kind)}`,
    );
  }
  const descriptor = {
    kind: "network" as const,
    resultPartitionId,
    isUnknown: false as const,
    producerLocation,
    connection: Object.freeze({ ...connection }),
    storesLocalResourcesOn: producerLocation,
  };
  return Object.freeze(plugin === undefined ? descriptor : { ...descriptor, plugin });
}

/** True for the placeholder of a not-yet-deployed producer. */
export function isUnknownShuffleDescriptor(
  descriptor: ShuffleDescriptor,
): descriptor is UnknownShuffleDescriptor {
  return descriptor.isUnknown;
}

/** True for a descriptor of the bundled network shuffle. */
export function isNetworkShuffleDescriptor(
  descriptor: ShuffleDescriptor,
): descriptor is NetworkShuffleDescriptor {
  return descriptor.kind === "network" && !descriptor.isUnknown;
}

/**
 * True when the partition's producer runs in the worker `consumerLocation`, so the consumer reads
 * it in-process (a local channel) instead of over a connection (Flink's `isLocalTo`).
 */
export function isLocalTo(
  descriptor: NetworkShuffleDescriptor,
  consumerLocation: ResourceID,
): boolean {
  return descriptor.producerLocation.equals(consumerLocation);
}

/**
 * The JSON form of a shuffle descriptor (version 1). Ids are strings: a ResultPartitionID as
 * `<dataSetHex>#<partitionNum>@<graphHex>_<vertexHex>_<subtask>_<attempt>`, a ResourceID as 32
 * lowercase hex digits.
 *
 * - `unknown`: `{ version, kind: "unknown", resultPartitionId }`
 * - `network`: `{ version, kind: "network", resultPartitionId, producerLocation, connection:
 *   { kind: "remote", host, port, connectionIndex } | { kind: "local" }, plugin? }`
 * - any other kind: `{ version, kind, resultPartitionId, isUnknown, storesLocalResourcesOn:
 *   <hex> | null, plugin? }`
 */
export interface ShuffleDescriptorJSON {
  /** The format version, 1. */
  readonly version: number;
  /** The descriptor's kind: `network`, `unknown`, or a plugin's own. */
  readonly kind: string;
  /** The partition's `ResultPartitionID`, in its string form. */
  readonly resultPartitionId: string;
  /** True for a placeholder of a producer not deployed yet (plugin kinds only). */
  readonly isUnknown?: boolean;
  /** The worker whose resources the partition occupies (hex resource id), or null when it occupies none (plugin kinds only). */
  readonly storesLocalResourcesOn?: string | null;
  /** The producer's worker, a hex resource id (`network` only). */
  readonly producerLocation?: string;
  /** Where consumers connect (`network` only). */
  readonly connection?: PartitionConnectionInfo;
  /** A plugin's own fields, kept as they are (plugin kinds only). */
  readonly plugin?: JsonObject;
}

function shuffleDescriptorToJSON(descriptor: ShuffleDescriptor): ShuffleDescriptorJSON {
  const base = {
    version: 1,
    kind: descriptor.kind,
    resultPartitionId: descriptor.resultPartitionId.toString(),
  };
  const plugin = descriptor.plugin === undefined ? {} : { plugin: descriptor.plugin };
  if (descriptor.kind === "unknown") return base;
  if (isNetworkShuffleDescriptor(descriptor)) {
    return {
      ...base,
      producerLocation: descriptor.producerLocation.toString(),
      connection: { ...descriptor.connection },
      ...plugin,
    };
  }
  return {
    ...base,
    isUnknown: descriptor.isUnknown,
    storesLocalResourcesOn: descriptor.storesLocalResourcesOn?.toString() ?? null,
    ...plugin,
  };
}

function shuffleDescriptorFromFields(fields: JsonFields): ShuffleDescriptor {
  const kind = fields.string("kind");
  const resultPartitionId = fields.id(
    "resultPartitionId",
    "a ResultPartitionID (<dataSetHex>#<n>@<graphHex>_<vertexHex>_<subtask>_<attempt>)",
    ResultPartitionID.parse,
  );
  if (kind === "unknown") return createUnknownShuffleDescriptor(resultPartitionId);
  const plugin = fields.optionalJsonObject("plugin");
  if (kind === "network") {
    const producerLocation = fields.id(
      "producerLocation",
      "a ResourceID (32 hex digits)",
      ResourceID.fromHex,
    );
    const connectionFields = fields.object("connection");
    const connectionKind = connectionFields.string("kind");
    let connection: PartitionConnectionInfo;
    if (connectionKind === "local") {
      connection = { kind: "local" };
    } else if (connectionKind === "remote") {
      const host = connectionFields.string("host");
      if (host === "") connectionFields.fail("host", "must not be empty", host);
      connection = {
        kind: "remote",
        host,
        port: connectionFields.integer("port", 1, 65535),
        connectionIndex: connectionFields.integer("connectionIndex", 0, 2 ** 31 - 1),
      };
    } else {
      return connectionFields.fail("kind", 'must be "remote" or "local"', connectionKind);
    }
    return createNetworkShuffleDescriptor(resultPartitionId, producerLocation, connection, plugin);
  }
  if (kind === "") fields.fail("kind", "must not be empty", kind);
  const isUnknown = fields.boolean("isUnknown");
  const location = fields.raw("storesLocalResourcesOn");
  const storesLocalResourcesOn =
    location === null || location === undefined
      ? undefined
      : fields.id(
          "storesLocalResourcesOn",
          "a ResourceID (32 hex digits) or null",
          ResourceID.fromHex,
        );
  const descriptor: ShuffleDescriptor = {
    kind,
    resultPartitionId,
    isUnknown,
    storesLocalResourcesOn,
  };
  return Object.freeze(plugin === undefined ? descriptor : { ...descriptor, plugin });
}

/**
 * JSON codec of {@link ShuffleDescriptor}s of every kind (see {@link ShuffleDescriptorJSON} for
 * the format). Descriptors of unknown kinds keep `isUnknown`, `storesLocalResourcesOn` and
 * `plugin`, so a third-party plugin's descriptors round-trip without registering anything.
 */
export const ShuffleDescriptorCodec: DescriptorCodec<ShuffleDescriptor, ShuffleDescriptorJSON> =
  defineCodec("ShuffleDescriptor", shuffleDescriptorToJSON, shuffleDescriptorFromFields);
