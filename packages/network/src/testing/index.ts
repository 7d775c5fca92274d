/**
 * @sluice/network/testing: fixtures for tests of network-shuffle plugins — deploy an all-to-all
 * exchange through the real SPI path and check exactly-once, in-order delivery per channel.
 */

export { createTestPki, type TestPki } from "./certificates.js";
export {
  describeHostilePeerSuite,
  type HostilePeerTransport,
  pollError,
} from "./hostile-peer-suite.js";
export {
  type AllToAllJob,
  consume,
  consumeAll,
  deployAllToAll,
  deployConsumers,
  type ExchangeOptions,
  environmentContext,
  makeRecord,
  produce,
  type RawConfig,
  RecordChecker,
  RUNNING_PRODUCER,
  requestPartitions,
  runAllToAll,
} from "./shuffle-fixture.js";
export { describeNetworkTlsSuite, type EnvironmentFactory } from "./tls-suite.js";
