import type { MetricDump } from "@sluice/runtime";
import * as z from "zod";
import { text } from "./wire-schemas.js";

/**
 * One metric as it crosses the control plane: the runtime's `MetricDump`, with a value JSON can
 * carry (`NaN`, a gauge without a value yet, travels as `null`).
 */
export const metricDumpSchema = z.object({
  scope: z.array(text(512)).max(64),
  logicalScope: text(1024),
  variables: z.record(text(256), text(1024)),
  name: text(512),
  type: z.enum(["counter", "gauge", "meter"]),
  value: z.number().nullable(),
  count: z.number().optional(),
});

/** A metric read from a task manager: the runtime's `MetricDump`, `null` where it had `NaN`. */
export type RemoteMetricDump = z.output<typeof metricDumpSchema>;

/**
 * The answer to `queryMetrics` (Flink's `MetricQueryService`): every metric of the task manager's
 * registry with its current value. Bounded: a task manager holds a few dozen metrics per task.
 */
export const metricQueryResultSchema = z.object({
  metrics: z.array(metricDumpSchema).max(1 << 20),
});

/** `registry.dump()` in the wire form: non-finite values become `null`. */
export function toRemoteMetricDumps(dumps: readonly MetricDump[]): RemoteMetricDump[] {
  return dumps.map((dump) => ({
    ...dump,
    scope: [...dump.scope],
    variables: { ...dump.variables },
    value: Number.isFinite(dump.value) ? dump.value : null,
  }));
}
