/**
 * Building blocks of the control plane's message schemas. zod is the control plane's one schema
 * system: every message is checked against its schema on receipt. Every string is bounded, so a
 * peer cannot make the receiver hold a huge value; ids travel as their string forms and
 * descriptors as `json` in the versioned forms of their runtime-api codecs, which the handler
 * decodes (those codecs belong to the plugin SPI, where zod must not be required).
 */
import type { ExecutionState, JsonValue } from "@sluice/runtime-api";
import * as z from "zod";

/** A bounded string: names, ids and messages are short. */
export const text = (max = 4096) => z.string().max(max);

/** A port; -1 means "no data server" (local communication only). */
export const port = z.int().min(-1).max(65535);

/** A count or index. */
export const count = z.int().min(0);

/**
 * A non-negative 64-bit integer (a checkpoint id, a timestamp) as its decimal string: JSON numbers
 * lose precision beyond 2^53.
 */
export const uint64 = z.string().regex(/^\d{1,19}$/, "a decimal integer of 1 to 19 digits");

/** Any JSON value (codecs check the structure they expect themselves). */
export const json: z.ZodType<JsonValue> = z.json() as z.ZodType<JsonValue>;

/** An error as it crosses processes (`SerializedThrowable`): its code survives. */
export const serializedThrowable = z.object({
  name: text(256),
  code: text(64).optional(),
  message: text(64 * 1024),
  stack: text(64 * 1024).optional(),
  /** The partition a partition exception names (`<partition>@<producer attempt>`). */
  partitionId: text(256).optional(),
});

/** Flink's execution states. */
export const executionState = z.enum([
  "CREATED",
  "SCHEDULED",
  "DEPLOYING",
  "INITIALIZING",
  "RUNNING",
  "FINISHED",
  "CANCELING",
  "CANCELED",
  "FAILED",
  "RECONCILING",
] as const satisfies readonly ExecutionState[]);
