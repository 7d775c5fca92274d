/**
 * `@sluice/ha-etcd/testing`: a real etcd for tests of the etcd high-availability services (and of
 * applications that use them): started on free loopback ports with a temporary data folder, over
 * TLS with client certificates from a throw-away authority if asked.
 */
export {
  type EtcdServer,
  type EtcdServerTls,
  etcdBinary,
  etcdUnavailableReason,
  type StartEtcdOptions,
  startEtcd,
} from "./etcd-server.js";
export { createTestCertificates, type TestCertificates } from "./test-certificates.js";
