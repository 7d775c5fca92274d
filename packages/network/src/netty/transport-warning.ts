/** The `type` of the process warnings a transport emits for errors nobody else receives. */
export const TRANSPORT_WARNING_TYPE = "SluiceTransportWarning";

/**
 * Reports an error of a listening data server as a `SluiceTransportWarning` process warning
 * (printed to stderr unless the process handles `warning` events): the default of
 * `ListenOptions.onError`, for servers whose owner passed no callback.
 */
export function emitTransportWarning(what: string, error: Error): void {
  process.emitWarning(`${what}: ${error.message}`, {
    type: TRANSPORT_WARNING_TYPE,
    code: "SLUICE_TRANSPORT_LISTENER_ERROR",
    detail: error.stack,
  });
}
