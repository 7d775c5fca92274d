import type { Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import type { TLSSocket } from "node:tls";
import { PartitionConnectionError } from "@sluice/core";
import { keepAliveDelayFor, type TlsSettings } from "@sluice/network/plugin";
import WebSocket from "ws";
import {
  CONTROL_PLANE_PATH,
  controlPlaneUrl,
  JobManagerMethods,
  TaskManagerMethods,
} from "./control-plane-messages.js";
import { clientTlsOptions, pinViolation } from "./control-plane-tls.js";
import { RpcPeer } from "./rpc-peer.js";

/** A task manager's end of its control connection to the job manager. */
export type JobManagerConnection = RpcPeer<typeof TaskManagerMethods, typeof JobManagerMethods>;

/** Options of {@link connectToJobManager}. */
export interface ConnectOptions {
  readonly host: string;
  readonly port: number;
  readonly tls: TlsSettings | undefined;
  readonly maxMessageSize: number;
  /** `heartbeat.timeout`: how long a call waits for its reply; TCP keepalive derives from it. */
  readonly requestTimeoutMs: number;
  /** Connection refused is retried until this much time passed (the job manager may start later). */
  readonly retryForMs: number;
  readonly onProtocolError: (error: Error) => void;
}

/** The open connection and the local address it left from (the address the job manager sees). */
export interface ConnectedJobManager {
  readonly connection: JobManagerConnection;
  readonly localAddress: string;
  /**
   * Sets the connection's TCP keepalive for `heartbeat.timeout` `heartbeatTimeoutMs` (see
   * `keepAliveDelayFor`): the job manager's, which the task manager learns at `hello`.
   */
  keepAliveFor(heartbeatTimeoutMs: number): void;
}

const RETRY_DELAY_MS = 250;

/**
 * Opens the control connection to the job manager at `host:port` (`wss` with the internal
 * certificates when TLS is on). A refused connection is retried for `retryForMs`; a TLS failure
 * (an untrusted or unpinned job manager) is not.
 *
 * @throws PartitionConnectionError naming the address and why.
 */
export async function connectToJobManager(options: ConnectOptions): Promise<ConnectedJobManager> {
  const deadline = Date.now() + options.retryForMs;
  for (;;) {
    try {
      return await connectOnce(options);
    } catch (error) {
      if (!isConnectionRefused(error) || Date.now() + RETRY_DELAY_MS > deadline) throw error;
      await delay(RETRY_DELAY_MS);
    }
  }
}

/** Whether a connection attempt failed because nothing listens there (yet, or any more). */
export function isConnectionRefused(error: unknown): boolean {
  return (error as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED";
}

function connectOnce(options: ConnectOptions): Promise<ConnectedJobManager> {
  const { host, port, tls } = options;
  const address = controlPlaneUrl(host, port, tls !== undefined);
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${address}${CONTROL_PLANE_PATH}`, {
      maxPayload: options.maxMessageSize,
      handshakeTimeout: options.requestTimeoutMs,
      followRedirects: false,
      ...(tls === undefined ? {} : clientTlsOptions(tls)),
    });
    let localAddress = "";
    let raw: Socket | undefined;
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
      socket.terminate();
      reject(
        new PartitionConnectionError(
          `cannot reach the job manager at ${address}: ${error.message}`,
          {
            cause: error,
          },
        ),
      );
    };
    socket.once("error", fail);
    socket.once("upgrade", (response) => {
      raw = response.socket;
      // Never before the heartbeat would: a cut the heartbeats ride out keeps the connection.
      raw.setKeepAlive(true, keepAliveDelayFor(options.requestTimeoutMs));
      localAddress = raw.localAddress ?? "";
      if (tls === undefined) return;
      const violation = pinViolation(tls, raw as TLSSocket);
      if (violation !== undefined) fail(new Error(violation));
    });
    socket.once("open", () => {
      if (failed) return;
      socket.off("error", fail);
      const connection: JobManagerConnection = new RpcPeer({
        socket,
        local: TaskManagerMethods,
        remote: JobManagerMethods,
        label: `the job manager at ${host}:${port}`,
        requestTimeoutMs: options.requestTimeoutMs,
        onProtocolError: options.onProtocolError,
      });
      resolve({
        connection,
        localAddress: stripIpv4Mapped(localAddress),
        keepAliveFor: (heartbeatTimeoutMs) =>
          raw?.setKeepAlive(true, keepAliveDelayFor(heartbeatTimeoutMs)),
      });
    });
  });
}

/** `::ffff:10.0.0.1` → `10.0.0.1`. */
function stripIpv4Mapped(address: string): string {
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}
