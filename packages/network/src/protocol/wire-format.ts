import { IllegalArgumentError } from "@sluice/core";
import { FRAME_HEADER, MAGIC_NUMBER } from "./message-layout.js";

/*
 * What every codec of the protocol shares: writing the frame header, the checks that keep a field
 * the decoder would reject from ever leaving this process (as IllegalArgumentError), and how
 * errors print a field read off the wire.
 */

/** Throws unless `value` is an int32 of at least `min`; `name` says which field it is. */
export function checkInt(name: string, value: number, min: number): void {
  if ((value | 0) !== value || value < min) {
    throw new IllegalArgumentError(`${name} must be an int32 >= ${min}, got ${String(value)}`);
  }
}

/** Throws unless `receiverId` can write itself as an InputChannelID. */
export function checkReceiver(what: string, receiverId: unknown): void {
  // Duck-typed rather than instanceof: ids from another copy of @sluice/core are fine.
  if (typeof (receiverId as { writeTo?: unknown } | undefined)?.writeTo !== "function") {
    throw new IllegalArgumentError(`${what}: receiverId must be an InputChannelID`);
  }
}

/** Writes the frame header at `offset`; returns the offset of the body. */
export function writeFrameHeader(
  target: Buffer,
  offset: number,
  frameLength: number,
  id: number,
): number {
  target.writeInt32BE(frameLength, offset + FRAME_HEADER.frameLength);
  target.writeUInt32BE(MAGIC_NUMBER, offset + FRAME_HEADER.magic);
  target[offset + FRAME_HEADER.messageId] = id;
  return offset + FRAME_HEADER.BYTES;
}

/** A new buffer holding exactly one frame of `bodyLength` body bytes, its header written. */
export function allocateFrame(id: number, bodyLength: number): { frame: Buffer; body: number } {
  const frame = Buffer.allocUnsafe(FRAME_HEADER.BYTES + bodyLength);
  return { frame, body: writeFrameHeader(frame, 0, frame.length, id) };
}

/** `value` as `0x` and `digits` hex digits (its two's complement when negative), for errors. */
export function hex(value: number, digits: number): string {
  return `0x${(value >>> 0).toString(16).padStart(digits, "0")}`;
}
