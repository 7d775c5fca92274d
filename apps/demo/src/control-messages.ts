import * as z from "zod";

/**
 * The demo's messages on the control plane's application channel, in both directions. The
 * metrics themselves travel on the control plane's own `queryMetrics`.
 */

/**
 * Job manager → task manager, before the job's tasks run: the counters' throttle of `--throttle`.
 * While the job runs, the job message `throttle` (the REST endpoint's
 * `POST /jobs/:jobid/messages/throttle`, with the same payload) changes or lifts it.
 */
export const THROTTLE_MESSAGE = "throttle";

/** Its payload: records per second per count subtask (at least 1); `null` lifts the throttle. */
export const ThrottleSchema = z.object({
  recordsPerSecond: z.number().min(1).finite().nullable(),
});

/** Task manager → job manager, once registered: where its metric reporters serve. */
export const METRIC_ENDPOINTS_MESSAGE = "metric-endpoints";

/** Its payload: each started reporter's name and URL (reporters without one are left out). */
export const MetricEndpointsSchema = z.object({
  endpoints: z
    .array(z.object({ reporter: z.string().max(256), url: z.string().max(2048) }))
    .max(64),
});

/** A metric reporter's endpoint, for the start-up lines. */
export type MetricEndpoint = z.output<typeof MetricEndpointsSchema>["endpoints"][number];

/** The URLs of a registry's reporters that serve one (the Prometheus reporter's `url`). */
export function reporterEndpoints(
  reporters: readonly { readonly name: string; readonly reporter: unknown }[],
): MetricEndpoint[] {
  const endpoints: MetricEndpoint[] = [];
  for (const { name, reporter } of reporters) {
    const url = (reporter as { url?: unknown }).url;
    if (typeof url === "string") endpoints.push({ reporter: name, url });
  }
  return endpoints;
}
