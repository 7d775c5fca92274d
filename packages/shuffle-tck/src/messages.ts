/**
 * The IPC messages between the conformance suite (parent) and its worker processes. Each
 * request carries an `id`; the worker answers with the same id, `ok` and a result or an error.
 */

/** An error as it crosses the process boundary. */
export interface WireError {
  readonly code: string | undefined;
  readonly name: string;
  readonly message: string;
}

/** How a producer writes: records per subpartition, optional keying and failure injection. */
export interface ProducePlan {
  /** Records written to each subpartition (or in total when `keyed`). */
  readonly records: number;
  /** Filler bytes after the 12-byte record header. */
  readonly padding: number;
  /** Route records by key-group hash of a generated key instead of round-robin. */
  readonly keyed?: boolean;
  /** Call `writer.fail(new Error(failMessage))` after this many records. */
  readonly failAfter?: number;
  readonly failMessage?: string;
  /** Flush after this many records (0 = never; the writer's own flush rules apply). */
  readonly flushEvery?: number;
}

export interface ProduceResult {
  readonly emitted: number;
  /** True when the writer was found unavailable at least once (backpressure was observed). */
  readonly backPressured: boolean;
  /** Set when the partition was released under the producer (consumer cancelled). */
  readonly releasedError?: WireError;
}

export interface ConsumeOptions {
  /** Stop polling until an `unstall` request for this gate. */
  readonly stalled?: boolean;
  /** Stop polling (as `stalled`) once this many buffers arrived: proves the channel is connected. */
  readonly stallAfter?: number;
  /** Close the gate after this many records (a consumer cancel). */
  readonly cancelAfter?: number;
}

export interface ConsumeResult {
  /** Records received per channel. */
  readonly counts: number[];
  /** Order or content violations (empty when every record arrived once, in order). */
  readonly violations: string[];
  readonly finished: boolean;
  readonly error?: WireError;
}

export type Request =
  | {
      readonly id: number;
      readonly cmd: "init";
      readonly config: Record<string, unknown>;
      readonly configDir?: string;
    }
  | {
      readonly id: number;
      readonly cmd: "createWriters";
      readonly owner: string;
      readonly attempt: string;
      readonly descriptors: unknown[];
      readonly delayMs?: number;
    }
  | {
      readonly id: number;
      readonly cmd: "produce";
      readonly writer: string;
      readonly plan: ProducePlan;
    }
  | { readonly id: number; readonly cmd: "producerStatus"; readonly writer: string }
  | { readonly id: number; readonly cmd: "cancelProducer"; readonly writer: string }
  | {
      readonly id: number;
      readonly cmd: "createGates";
      readonly owner: string;
      readonly attempt: string;
      readonly descriptors: unknown[];
    }
  | {
      readonly id: number;
      readonly cmd: "consume";
      readonly gate: string;
      readonly options: ConsumeOptions;
    }
  | { readonly id: number; readonly cmd: "consumerStatus"; readonly gate: string }
  | { readonly id: number; readonly cmd: "unstall"; readonly gate: string }
  | { readonly id: number; readonly cmd: "status" }
  | { readonly id: number; readonly cmd: "close" };

export type Response =
  | { readonly id: number; readonly ok: true; readonly result: unknown }
  | { readonly id: number; readonly ok: false; readonly error: WireError };

export function toWireError(error: unknown): WireError {
  const e = error as { code?: unknown; name?: unknown; message?: unknown };
  return {
    code: typeof e?.code === "string" ? e.code : undefined,
    name: typeof e?.name === "string" ? e.name : "Error",
    message: typeof e?.message === "string" ? e.message : String(error),
  };
}
