/**
 * @sluice/shuffle-tck/transport: the transport-level kit for network-shuffle plugins. Their
 * TaskExecutors run in the test's own process (so a test can reach a data port or an environment
 * directly), and the suites check the transport: exactly-once exchanges, task events, mutual TLS,
 * hostile peers.
 */
export { closedAfterBlockedTlsHandshake } from "./blocked-tls-handshake.js";
export {
  type BlockingTransportSuiteOptions,
  describeBlockingTransportSuite,
} from "./blocking-transport-suite.js";
export {
  describeHostilePeerLimitsSuite,
  type RawPeer,
  type RawPeerConnector,
} from "./hostile-peer-limits-suite.js";
export {
  decodeAnswer,
  describeHostilePeerSuite,
  type HostilePeerTransport,
} from "./hostile-peer-suite.js";
export {
  describeHostileRpcPortLimitsSuite,
  type HostileRpcPortTarget,
  type MalformedFrames,
  type RpcPortLimits,
  type RpcPortStats,
  type RpcPortUnderTest,
} from "./hostile-rpc-port-limits-suite.js";
export {
  advertising,
  type DeployedExchange,
  type GatewayOptions,
  gatewayOf,
  InProcessCluster,
  networkEnvironmentOf,
  type RawConfig,
} from "./in-process-cluster.js";
export { describeKeepAliveSuite } from "./keep-alive-suite.js";
export { describeListenerErrorsSuite } from "./listener-errors-suite.js";
export { connectRawTcp, rawTcpPeer } from "./raw-tcp-peer.js";
export {
  SMALLEST_BUFFER_SETTINGS,
  SMALLEST_BUFFER_SETTINGS_BASE,
} from "./smallest-buffer-settings.js";
export { describeSmallestBufferSettingsSuite } from "./smallest-buffer-settings-suite.js";
export { describeNetworkTlsSuite } from "./tls-suite.js";
export {
  describeTransportSuite,
  type TransportSuiteOptions,
  type TransportVariant,
} from "./transport-suite.js";
