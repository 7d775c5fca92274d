import { HeartbeatManagerOptions, type ReadableConfig } from "@sluice/runtime-api";

/**
 * How many unanswered probes libuv lets TCP send, one a second, before it declares the peer dead:
 * `socket.setKeepAlive(true, delay)` sets `TCP_KEEPINTVL` to 1 s and `TCP_KEEPCNT` to 10 on
 * Linux (not the kernel's 75 s × 9), and Node offers no call to change either, nor
 * `TCP_USER_TIMEOUT`.
 */
export const KEEP_ALIVE_PROBE_SECONDS = 10;

/**
 * The idle time before TCP keepalive probes a connection, for a cluster whose heartbeats time
 * out after `heartbeatTimeoutMs`: the timeout itself, in whole seconds (rounded up: Node passes
 * whole seconds on). A peer that stops answering is then declared dead by TCP no sooner than
 * `heartbeat.timeout` plus the {@link KEEP_ALIVE_PROBE_SECONDS} probes: the heartbeat decides
 * first, and a network cut shorter than it is ridden out; keepalive only frees a connection on
 * which no heartbeat flows.
 */
export function keepAliveDelayFor(heartbeatTimeoutMs: number): number {
  return Math.max(1, Math.ceil(heartbeatTimeoutMs / 1_000)) * 1_000;
}

/** {@link keepAliveDelayFor} the configuration's `heartbeat.timeout`. */
export function readKeepAliveDelay(configuration: ReadableConfig): number {
  return keepAliveDelayFor(configuration.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT));
}
