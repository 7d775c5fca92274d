import { ConfigurationError } from "@sluice/core";
import type { ResultPartitionTypeInfo } from "@sluice/runtime-api";

/**
 * Refuses every partition type but the blocking ones: a remote shuffle stores finished
 * partitions, so a streaming job that names this plugin fails at once, not midway.
 *
 * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) for a pipelined or hybrid type.
 */
export function checkBlocking(type: ResultPartitionTypeInfo, what: string): void {
  if (type.isBlocking) return;
  throw new ConfigurationError(
    `${what}: @sluice/shuffle-remote stores BLOCKING partitions only, but the partition type is ${type.name}; ` +
      "connect the job's vertices with BLOCKING exchanges (a batch job), or choose another " +
      "'shuffle-service-factory.class' (tcp, ws) for streaming jobs",
  );
}
