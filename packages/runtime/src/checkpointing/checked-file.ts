import { crc32 } from "node:zlib";
import { CheckpointError } from "./checkpoint-error.js";

/**
 * The framing of every checkpoint file that is not channel state (a task's snapshot, a
 * checkpoint's `_metadata`): one header line, then the body.
 *
 * ```text
 * SLUICE-CHECKPOINT <format version> <body length in bytes> <CRC-32 of the body, 8 hex digits>\n
 * <body: one JSON document>
 * ```
 *
 * A reader checks the header, the length and the checksum before it parses anything, so a file
 * that was truncated, emptied, padded or altered — even into other valid JSON — is refused,
 * naming the file and what did not match, instead of restoring the wrong state.
 */
export const CHECKED_FILE_MAGIC = "SLUICE-CHECKPOINT";

/** The format version of the framing this build writes and reads. */
export const CHECKED_FILE_VERSION = 2;

/** A header line is short; a longer first line is not a header. */
const MAX_HEADER_LENGTH = 128;

/** `body` framed with its header line. */
export function frameCheckedFile(body: string): Buffer {
  const bytes = Buffer.from(body, "utf8");
  const header = `${CHECKED_FILE_MAGIC} ${CHECKED_FILE_VERSION} ${bytes.length} ${checksumOf(bytes)}\n`;
  return Buffer.concat([Buffer.from(header, "latin1"), bytes]);
}

/**
 * The body of a framed file, once its header, length and checksum matched.
 *
 * @param what - names the file in errors (`Count (1/2)#0: the snapshot /x/chk-3/a.json ...`).
 * @throws CheckpointError naming `what` and what did not match.
 */
export function unframeCheckedFile(file: Buffer, what: string): string {
  const newline = file.subarray(0, MAX_HEADER_LENGTH + 1).indexOf(0x0a);
  if (newline < 0) {
    throw new CheckpointError(
      `${what} has no ${CHECKED_FILE_MAGIC} header (${file.length} bytes): it is not a checkpoint file of this release, or it was truncated or overwritten`,
    );
  }
  const fields = file.subarray(0, newline).toString("latin1").split(" ");
  const [magic, version, length, checksum] = fields;
  if (fields.length !== 4 || magic !== CHECKED_FILE_MAGIC || !/^\d+$/.test(length ?? "")) {
    throw new CheckpointError(`${what} has a malformed ${CHECKED_FILE_MAGIC} header`);
  }
  if (version !== String(CHECKED_FILE_VERSION)) {
    throw new CheckpointError(
      `${what} is of format version ${version}, but this release reads version ${CHECKED_FILE_VERSION}`,
    );
  }
  const body = file.subarray(newline + 1);
  if (body.length !== Number(length)) {
    throw new CheckpointError(
      `${what} is damaged: its header records ${length} bytes, but ${body.length} follow (truncated or padded)`,
    );
  }
  const actual = checksumOf(body);
  if (actual !== checksum) {
    throw new CheckpointError(
      `${what} is damaged: the CRC-32 of its ${body.length} bytes is ${actual}, but its header records ${checksum}`,
    );
  }
  return body.toString("utf8");
}

/** The CRC-32 of `bytes` as 8 hex digits. */
export function checksumOf(bytes: Uint8Array): string {
  return crc32(bytes).toString(16).padStart(8, "0");
}
