/**
 * @sluice/network/hostile: the hostile-peer limits suite every network-shuffle transport runs
 * in its tests (floods, non-reading, idle and slow peers, unfinished handshakes).
 */

export {
  describeHostilePeerLimitsSuite,
  type LimitsEnvironmentFactory,
  type RawPeer,
  type RawPeerConnector,
} from "./hostile-peer-limits-suite.js";
