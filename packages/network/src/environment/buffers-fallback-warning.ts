/** The `type` of the process warning emitted when a gate or output pool takes fewer buffers. */
export const BUFFERS_FALLBACK_WARNING_TYPE = "SluiceNetworkBuffersWarning";

/** The `code` of that warning. */
export const BUFFERS_FALLBACK_WARNING_CODE = "SLUICE_BUFFERS_FALLBACK";

/**
 * Reports, once per gate or output pool, that it runs with fewer buffers than configured and
 * why: the job deploys, but more slowly than it could, and the operator needs to know which
 * pool and which keys to change. Printed to stderr unless the process handles `warning` events.
 */
export function emitBuffersFallbackWarning(message: string): void {
  process.emitWarning(message, {
    type: BUFFERS_FALLBACK_WARNING_TYPE,
    code: BUFFERS_FALLBACK_WARNING_CODE,
  });
}
