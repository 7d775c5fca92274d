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
 * What lets a producer push a partition to its worker and a consumer query its checksums: the
 * job it belongs to and the token the shuffle manager made for it with the worker's secret
 * (see docs/security.md). It travels in the descriptor, so it is as confidential as the control
 * plane that deploys tasks (TLS with `security.ssl.internal.*`).
 */
export type PartitionAccess = {
  /** The job the partition was assigned for (32 hex digits). */
  readonly jobId: string;
  /** HMAC-SHA256 of job and partition id, keyed with the worker's secret (64 hex digits). */
  readonly token: string;
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
  readonly plugin: { readonly worker: ShuffleWorkerAddress; readonly access: PartitionAccess };
}

/** Creates the descriptor of a partition assigned to `worker`, for the job `access` names. */
export function createRemoteShuffleDescriptor(
  resultPartitionId: ResultPartitionID,
  worker: ShuffleWorkerAddress,
  access: PartitionAccess,
): RemoteShuffleDescriptor {
  return Object.freeze({
    kind: REMOTE_SHUFFLE_DESCRIPTOR_KIND,
    resultPartitionId,
    isUnknown: false,
    storesLocalResourcesOn: undefined,
    plugin: Object.freeze({
      worker: Object.freeze({ ...worker }),
      access: Object.freeze({ jobId: access.jobId, token: access.token }),
    }),
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

/**
 * The job and access token a descriptor of this plugin carries, validated.
 *
 * @throws DescriptorError when `descriptor` carries no valid access.
 */
export function accessOf(descriptor: ShuffleDescriptor): PartitionAccess {
  const access = (descriptor.plugin as { access?: Record<string, unknown> } | undefined)?.access;
  if (
    access === undefined ||
    typeof access.jobId !== "string" ||
    !/^[0-9a-f]{32}$/.test(access.jobId) ||
    typeof access.token !== "string" ||
    !/^[0-9a-f]{64}$/.test(access.token)
  ) {
    throw new DescriptorError(
      `shuffle descriptor of ${descriptor.resultPartitionId}: field "plugin.access" must be { jobId (32 hex digits), token (64 hex digits) }`,
    );
  }
  return { jobId: access.jobId, token: access.token };
}

/** `host:rpcPort (incarnation …)`, how messages name a worker. */
export function describeWorker(worker: ShuffleWorkerAddress): string {
  return `shuffle worker ${worker.host}:${worker.rpcPort} (incarnation ${worker.incarnation})`;
}

/**
 * `host:rpcPort`, how a worker names itself to peers it has not authenticated: its incarnation
 * is half of what a forged push would need, so it never leaves in such a reply.
 */
export function describeWorkerAddress(
  worker: Pick<ShuffleWorkerAddress, "host" | "rpcPort">,
): string {
  return `shuffle worker ${worker.host}:${worker.rpcPort}`;
}
