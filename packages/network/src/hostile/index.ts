/**
 * @sluice/network/hostile: suites every network-shuffle transport runs in its tests — hostile
 * and careless peers against the data server's limits (floods, non-reading, idle and slow peers,
 * unfinished handshakes), and every buffer limit at its smallest valid value.
 */

export {
  describeHostilePeerLimitsSuite,
  type LimitsEnvironmentFactory,
  type RawPeer,
  type RawPeerConnector,
} from "./hostile-peer-limits-suite.js";
export { describeSmallestBufferSettingsSuite } from "./smallest-buffer-settings-suite.js";
