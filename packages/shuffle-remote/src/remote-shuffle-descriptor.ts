import type { ResultPartitionID } from "@sluice/core";
import { DescriptorError, type ShuffleDescriptor } from "@sluice/runtime-api";

/** The `kind` of this plugin's shuffle descriptors. */
export const REMOTE_SHUFFLE_DESCRIPTOR_KIND = "remote";

/**
 * Where one shuffle worker is reached, and which start of it: a worker restarted on the same
 * ports is a new incarnation and holds none of the old one's partitions.
 */
export type ShuffleWorkerAddress = {
  /** Host of the worker (`remote-shuffle.worker.host`). */
  readonly host: string;
  /** Port for pushed partitions and checksum queries (`remote-shuffle.worker.rpc-port`). */
  readonly rpcPort: number;
  /** Port the stored partitions are read from (`remote-shuffle.worker.data-port`). */
  readonly dataPort: number;
  /** 32 hex digits, new at every start of the worker process. */
  readonly incarnation: string;
};

/**
 * The descriptor of a partition stored on a shuffle worker: `storesLocalResourcesOn` is
 * `undefined`, since no task manager holds its data, so the job side neither pins the producer's
 * task manager nor asks one to release it; the ShuffleMaster releases it on the worker.
 */
export interface RemoteShuffleDescriptor extends ShuffleDescriptor {
  readonly kind: typeof REMOTE_SHUFFLE_DESCRIPTOR_KIND;
  readonly isUnknown: false;
  readonly storesLocalResourcesOn: undefined;
  readonly plugin: { readonly worker: ShuffleWorkerAddress };
}

/** Creates the descriptor of a partition assigned to `worker`. */
export function createRemoteShuffleDescriptor(
  resultPartitionId: ResultPartitionID,
  worker: ShuffleWorkerAddress,
): RemoteShuffleDescriptor {
  return Object.freeze({
    kind: REMOTE_SHUFFLE_DESCRIPTOR_KIND,
    resultPartitionId,
    isUnknown: false,
    storesLocalResourcesOn: undefined,
    plugin: Object.freeze({ worker: Object.freeze({ ...worker }) }),
  });
}

function isPort(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) > 0 && (value as number) <= 65535;
}

/**
 * The worker a descriptor of this plugin names, validated (descriptors arrive as JSON).
 *
 * @throws DescriptorError when `descriptor` is not a valid remote shuffle descriptor.
 */
export function workerOf(descriptor: ShuffleDescriptor): ShuffleWorkerAddress {
  const where = `shuffle descriptor of ${descriptor.resultPartitionId}`;
  if (descriptor.kind !== REMOTE_SHUFFLE_DESCRIPTOR_KIND) {
    throw new DescriptorError(
      `${where}: kind must be "${REMOTE_SHUFFLE_DESCRIPTOR_KIND}" (made by @sluice/shuffle-remote), got ${JSON.stringify(descriptor.kind)}`,
    );
  }
  const worker = (descriptor.plugin as { worker?: Record<string, unknown> } | undefined)?.worker;
  if (
    worker === undefined ||
    typeof worker.host !== "string" ||
    worker.host === "" ||
    !isPort(worker.rpcPort) ||
    !isPort(worker.dataPort) ||
    typeof worker.incarnation !== "string" ||
    !/^[0-9a-f]{32}$/.test(worker.incarnation)
  ) {
    throw new DescriptorError(
      `${where}: field "plugin.worker" must be { host, rpcPort, dataPort, incarnation (32 hex digits) }, got ${JSON.stringify(worker)}`,
    );
  }
  return {
    host: worker.host,
    rpcPort: worker.rpcPort,
    dataPort: worker.dataPort,
    incarnation: worker.incarnation,
  };
}

/** `host:rpcPort (incarnation …)`, how messages name a worker. */
export function describeWorker(worker: ShuffleWorkerAddress): string {
  return `shuffle worker ${worker.host}:${worker.rpcPort} (incarnation ${worker.incarnation})`;
}
