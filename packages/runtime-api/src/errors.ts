import { defineError, ErrorCodes } from "@sluice/core";

/**
 * A serialized descriptor (see the `*Codec` objects) is malformed: not JSON, of an unknown
 * `version`, missing a field, a field of the wrong type, or a value out of range. The message names
 * the descriptor type, the field path and the value that was found.
 *
 * Thrown by `fromJSON`/`deserialize` of every descriptor codec and by the `create*` helpers that
 * validate descriptors. Code: `SLUICE_ERR_DESCRIPTOR`.
 */
export const DescriptorError = defineError("DescriptorError", ErrorCodes.DESCRIPTOR);
export type DescriptorError = InstanceType<typeof DescriptorError>;

/**
 * A metric reporter could not do its job: it failed to open (e.g. the Prometheus reporter found no
 * free port in `metrics.reporter.<name>.port`) or its `open()` threw. The message names the
 * reporter and what it tried. Code: `SLUICE_ERR_METRIC_REPORTER`.
 */
export const MetricReporterError = defineError("MetricReporterError", ErrorCodes.METRIC_REPORTER);
export type MetricReporterError = InstanceType<typeof MetricReporterError>;

/**
 * A job manager's write to the high-availability stores (or an RPC it sent) was refused because
 * its fencing token is no longer the current leader's: another job manager was elected since. The
 * deposed job manager must stop acting as the leader. Code: `SLUICE_ERR_HA_FENCED`.
 */
export const FencingTokenError = defineError("FencingTokenError", ErrorCodes.HA_FENCED);
export type FencingTokenError = InstanceType<typeof FencingTokenError>;

/**
 * The high-availability services could not reach their coordination service (etcd at
 * `high-availability.etcd.endpoints`) or it failed a request. The message names the endpoints and
 * the operation; `cause` is the client's error. Code: `SLUICE_ERR_HA_UNAVAILABLE`.
 */
export const HighAvailabilityUnavailableError = defineError(
  "HighAvailabilityUnavailableError",
  ErrorCodes.HA_UNAVAILABLE,
);
export type HighAvailabilityUnavailableError = InstanceType<
  typeof HighAvailabilityUnavailableError
>;

/**
 * A pointer in the coordination service names a file under `high-availability.storageDir` that
 * is missing, unreadable or damaged. The message names the key and the file. Code:
 * `SLUICE_ERR_HA_STATE`.
 */
export const HighAvailabilityStateError = defineError(
  "HighAvailabilityStateError",
  ErrorCodes.HA_STATE,
);
export type HighAvailabilityStateError = InstanceType<typeof HighAvailabilityStateError>;
