import { type ErrorCode, ErrorCodes } from "@sluice/core";

/**
 * The numeric wire id of every error code (the int16 that starts an ErrorResponse body). One
 * table, both directions (as trpc does). The numbers are part of the protocol: never reuse or
 * renumber one; a new code gets the next free number. `satisfies` makes the compiler reject the
 * table when a code is added to `ErrorCodes` without a wire id.
 */
export const ERROR_WIRE_IDS = {
  [ErrorCodes.UNKNOWN]: 0,
  [ErrorCodes.INVALID_ARGUMENT]: 1,
  [ErrorCodes.ILLEGAL_STATE]: 2,
  [ErrorCodes.INSUFFICIENT_BUFFERS]: 3,
  [ErrorCodes.BUFFER_POOL_DESTROYED]: 4,
  [ErrorCodes.BUFFER_RECYCLED]: 5,
  [ErrorCodes.RECORD_TOO_LARGE]: 6,
  [ErrorCodes.SERIALIZATION]: 7,
  [ErrorCodes.CONFIG]: 8,
  [ErrorCodes.DESCRIPTOR]: 9,
  [ErrorCodes.PLUGIN_NOT_FOUND]: 10,
  [ErrorCodes.PLUGIN_EXPORT_MISSING]: 11,
  [ErrorCodes.PLUGIN_INVALID]: 12,
  [ErrorCodes.PLUGIN_INSTANTIATION]: 13,
  [ErrorCodes.PARTITION_NOT_FOUND]: 14,
  [ErrorCodes.PRODUCER_FAILED]: 15,
  [ErrorCodes.CANCELLED]: 16,
  [ErrorCodes.PROTOCOL]: 17,
  [ErrorCodes.BUFFER_REORDERING]: 18,
  [ErrorCodes.PARTITION_CONNECTION]: 19,
  [ErrorCodes.REMOTE_TRANSPORT]: 20,
  [ErrorCodes.LOCAL_TRANSPORT]: 21,
  [ErrorCodes.TIMEOUT]: 22,
  [ErrorCodes.PLUGIN_CONTRACT]: 23,
  [ErrorCodes.TASK_DEPLOYMENT]: 24,
  [ErrorCodes.TASK_NOT_FOUND]: 25,
  [ErrorCodes.BUFFER_DECOMPRESSION]: 26,
  [ErrorCodes.PARTITION_FILE_CORRUPTED]: 27,
  [ErrorCodes.LIMIT_EXCEEDED]: 28,
  [ErrorCodes.CHECKPOINT]: 29,
  [ErrorCodes.METRIC_REPORTER]: 30,
  [ErrorCodes.TCK_WORKER_NOT_FOUND]: 31,
  [ErrorCodes.PARTITION_FILE_WRITE]: 32,
  [ErrorCodes.SINK_TRANSACTION]: 47,
  [ErrorCodes.HA_FENCED]: 50,
  [ErrorCodes.HA_UNAVAILABLE]: 51,
  [ErrorCodes.HA_STATE]: 52,
  [ErrorCodes.KEYED_STATE]: 56,
  [ErrorCodes.TASK_SLOT_THREAD]: 60,
  [ErrorCodes.STATE_ASSIGNMENT]: 61,
} as const satisfies Record<ErrorCode, number>;

/** The wire id written for errors that carry no Sluice code (plain `Error`s, non-errors). */
export const UNKNOWN_ERROR_WIRE_ID: number = ERROR_WIRE_IDS[ErrorCodes.UNKNOWN];

const ENTRIES = Object.entries(ERROR_WIRE_IDS) as [ErrorCode, number][];
const WIRE_ID_BY_CODE: ReadonlyMap<string, number> = new Map(ENTRIES);
const CODE_BY_WIRE_ID: ReadonlyMap<number, ErrorCode> = new Map(
  ENTRIES.map(([code, id]) => [id, code]),
);

/** The wire id of `code`; codes unknown to this build map to the id of `SLUICE_ERR_UNKNOWN`. */
export function errorWireIdOf(code: string): number {
  return WIRE_ID_BY_CODE.get(code) ?? UNKNOWN_ERROR_WIRE_ID;
}

/** The code of a wire id, or `undefined` for an id this build does not know (a newer peer). */
export function errorCodeOfWireId(wireId: number): ErrorCode | undefined {
  return CODE_BY_WIRE_ID.get(wireId);
}
