/**
 * `@sluice/ha-etcd/testing`: a real etcd for tests of the etcd high-availability services (and of
 * applications that use them): started on free loopback ports with a temporary data folder, over
 * TLS with client certificates if asked (`@sluice/core/test-certificates` makes a throw-away
 * authority and certificates that fit).
 */
export {
  type EtcdServer,
  type EtcdServerTls,
  etcdBinary,
  etcdUnavailableReason,
  type StartEtcdOptions,
  startEtcd,
} from "./etcd-server.js";
