import {
  ErrorCodes,
  type InputChannelID,
  isSluiceError,
  reconstructError,
  SluiceError,
} from "@sluice/core";
import { errorCodeOfWireId, errorWireIdOf, UNKNOWN_ERROR_WIRE_ID } from "./error-wire-ids.js";
import { MessageId } from "./message-id.js";
import type { ErrorResponse } from "./netty-message.js";

/** Longest error name written (UTF-8 bytes); longer names are cut. */
export const MAX_ERROR_NAME_BYTES = 256;

/**
 * Longest error message written (UTF-8 bytes); longer messages are cut at a character boundary
 * and end with "…". Keeps an ErrorResponse far below any sensible max frame size.
 */
export const MAX_ERROR_MESSAGE_BYTES = 16 * 1024;

/** How many `cause` levels are appended to the message ("Caused by: …"). */
const MAX_CAUSE_DEPTH = 4;

const ELLIPSIS = Buffer.from("…", "utf8");

/**
 * `text` as UTF-8, at most `maxBytes` long: when longer it is cut at a character boundary and
 * ends with "…". Used by the encoder too, so an ErrorResponse always fits its length fields.
 */
export function utf8Capped(text: string, maxBytes: number): Buffer {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return bytes;
  let cut = Math.max(0, maxBytes - ELLIPSIS.length);
  // Back off over continuation bytes (10xxxxxx) so no character is split.
  while (cut > 0 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return Buffer.concat([bytes.subarray(0, cut), ELLIPSIS]);
}

function capString(text: string, maxBytes: number): string {
  // Fast path: no UTF-8 character is longer than 3 bytes per UTF-16 unit.
  if (text.length * 3 <= maxBytes) return text;
  return utf8Capped(text, maxBytes).toString("utf8");
}

function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    // A cause whose toString throws must not keep the error itself from being reported.
    return "<unprintable value>";
  }
}

function describe(err: Error): string {
  let text = err.message;
  let cause: unknown = err.cause;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && cause !== undefined; depth++) {
    if (cause instanceof Error) {
      text += `\nCaused by: ${cause.name}: ${cause.message}`;
      cause = cause.cause;
    } else {
      text += `\nCaused by: ${safeString(cause)}`;
      break;
    }
    if (text.length * 3 > MAX_ERROR_MESSAGE_BYTES) break;
  }
  return text;
}

/**
 * Builds the ErrorResponse that reports `err` to the peer. A SluiceError keeps its code (as a wire
 * id) and name; anything else is sent as `SLUICE_ERR_UNKNOWN` with its name (`TypeError`, …).
 * The message includes up to four levels of `cause` and is capped at
 * {@link MAX_ERROR_MESSAGE_BYTES}. Without `receiverId` the response is fatal for the connection.
 */
export function errorToErrorResponse(err: unknown, receiverId?: InputChannelID): ErrorResponse {
  let errorWireId = UNKNOWN_ERROR_WIRE_ID;
  let errorName = "Error";
  let message: string;
  if (isSluiceError(err)) {
    errorWireId = errorWireIdOf(err.code);
    errorName = err.name;
    message = describe(err);
  } else if (err instanceof Error) {
    errorName = err.name;
    message = describe(err);
  } else {
    message = safeString(err);
  }
  return {
    id: MessageId.ERROR_RESPONSE,
    errorWireId,
    errorName: capString(errorName, MAX_ERROR_NAME_BYTES),
    message: capString(message, MAX_ERROR_MESSAGE_BYTES),
    receiverId,
  };
}

/** True when the ErrorResponse has no receiver: the whole connection fails. */
export function isFatalErrorResponse(msg: ErrorResponse): boolean {
  return msg.receiverId === undefined;
}

/**
 * Rebuilds the error an ErrorResponse reports: wire id → code → class, by core's
 * `reconstructError`. An unknown wire id (a newer peer) yields a plain SluiceError with code
 * `SLUICE_ERR_UNKNOWN` whose message names the original error and the id.
 */
export function errorFromErrorResponse(msg: ErrorResponse): SluiceError {
  const code = errorCodeOfWireId(msg.errorWireId);
  if (code === undefined) {
    return new SluiceError(
      ErrorCodes.UNKNOWN,
      `${msg.errorName || "Error"} (unknown error wire id ${msg.errorWireId}): ${msg.message}`,
    );
  }
  return reconstructError(code, msg.errorName, msg.message);
}
