/**
 * `@sluice/ha-etcd`: job-manager high availability on etcd, what `high-availability.type: etcd`
 * loads. Leader election with a lease (`high-availability.etcd.lease-ttl`), leader retrieval, and
 * the job graph, completed-checkpoint and checkpoint ID stores, with pointers in etcd under
 * `/sluice/<high-availability.cluster-id>/` and the data under `high-availability.storageDir`.
 * Every store write is fenced by the writer's leadership. etcd is reached through its JSON gRPC
 * gateway with Node's own `http`/`https` ({@link EtcdClient}): nothing to build at install.
 */
export {
  type EtcdAuthOptions,
  EtcdClient,
  type EtcdClientOptions,
  type EtcdTlsOptions,
} from "./client/etcd-client.js";
export { EtcdCheckpointIDCounter } from "./etcd-checkpoint-id-counter.js";
export { EtcdCompletedCheckpointStore } from "./etcd-completed-checkpoint-store.js";
export {
  EtcdHighAvailabilityServices,
  type EtcdHighAvailabilityServicesSettings,
} from "./etcd-high-availability-services.js";
export { EtcdHighAvailabilityServicesFactory } from "./etcd-high-availability-services-factory.js";
export { EtcdJobGraphStore } from "./etcd-job-graph-store.js";
export {
  EtcdLeaderElection,
  JOB_MANAGER_ELECTION_PREFIX,
  type Leadership,
} from "./etcd-leader-election.js";
export { EtcdLeaderRetrievalService } from "./etcd-leader-retrieval-service.js";
