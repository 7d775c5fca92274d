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
