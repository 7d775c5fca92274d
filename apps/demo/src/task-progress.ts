import * as z from "zod";

/** The two operators of the word count. */
export type TaskKind = "source" | "count";

/**
 * A task's counters, read from its metrics: live from the job manager's metric queries, final in
 * the task's result. The result crosses the control plane, so the job manager checks it on
 * receipt.
 */
export const TaskProgressSchema = z.object({
  name: z.string().max(512),
  kind: z.enum(["source", "count"]),
  subtaskIndex: z.int().min(0),
  /** Records emitted (sources) or received (counters). */
  records: z.number().min(0),
  /** Bytes out of the partition (sources) or into the gate (counters). */
  bytes: z.number().min(0),
  /** outPoolUsage (sources) or inPoolUsage (counters), in [0, 1]. */
  poolUsage: z.number().min(0).max(1),
  /** Time the source waited for its back-pressured partition. */
  backPressuredTimeMs: z.number().min(0),
  finished: z.boolean(),
});

/** A task's live counters. */
export type TaskProgress = z.output<typeof TaskProgressSchema>;

/** What a task manager adds to its shutdown report: its peak resident set size. */
export const ShutdownExtrasSchema = z.object({ peakRssMb: z.number().min(0) });
