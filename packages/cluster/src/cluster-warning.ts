/** The `process.emitWarning` type of the control plane's warnings when the application takes none. */
export const CLUSTER_WARNING_TYPE = "SluiceClusterWarning";

/**
 * The default warning sink of a JobManager or TaskManager: a process warning (printed by Node
 * unless the application listens for `process.on("warning")`), so nothing is dropped silently.
 */
export function emitClusterWarning(message: string): void {
  process.emitWarning(message, CLUSTER_WARNING_TYPE);
}
