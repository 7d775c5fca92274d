import type { ListenOptions } from "./transport.js";

/** The `type` of the process warnings a transport emits for errors nobody else receives. */
export const TRANSPORT_WARNING_TYPE = "SluiceTransportWarning";

/**
 * Reports an error of a listening data server as a `SluiceTransportWarning` process warning
 * (printed to stderr unless the process handles `warning` events), prefixed with `what`.
 */
export function emitTransportWarning(what: string, error: Error): void {
  process.emitWarning(`${what}: ${error.message}`, {
    type: TRANSPORT_WARNING_TYPE,
    code: "SLUICE_TRANSPORT_LISTENER_ERROR",
    detail: error.stack,
  });
}

/**
 * What a transport attaches to its listening server's `error` event once it listens:
 * `options.onError`, or else a `SluiceTransportWarning` naming the server, so that an error of
 * a server that keeps listening is reported and never dropped.
 */
export function listenerErrorHandler(
  options: ListenOptions,
  transportName: string,
  port: number,
): (error: Error) => void {
  return (
    options.onError ??
    ((error) => emitTransportWarning(`${transportName} data server ${options.host}:${port}`, error))
  );
}
