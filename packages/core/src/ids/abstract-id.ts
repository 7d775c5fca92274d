import { randomFillSync } from "node:crypto";
import { IllegalArgumentError } from "../errors.js";

const HEX = /^[0-9a-f]{32}$/;

/**
 * A random 128-bit identifier, like Flink's `AbstractID`: two 64-bit halves (lower, upper) written
 * to the wire as lower long then upper long, big-endian (16 bytes), and printed as 32 hex digits.
 */
export abstract class AbstractId {
  /** The 16 bytes of the id in wire order (lower long, then upper long). */
  protected readonly bytes: Uint8Array;
  private cachedHex: string | undefined;

  protected constructor(bytes?: Uint8Array) {
    if (bytes === undefined) {
      this.bytes = randomFillSync(new Uint8Array(16));
    } else {
      if (bytes.length !== 16) {
        throw new IllegalArgumentError(`an id has 16 bytes, got ${bytes.length}`);
      }
      this.bytes = new Uint8Array(bytes);
    }
  }

  /** Writes the 16 wire bytes at `offset` of `target`. */
  writeTo(target: Uint8Array, offset: number): void {
    target.set(this.bytes, offset);
  }

  /** The 16 wire bytes (a copy). */
  toBytes(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }

  /** True when `other` is an id of the same kind with the same bits. */
  equals(other: unknown): boolean {
    return (
      other instanceof AbstractId &&
      other.constructor === this.constructor &&
      other.toString() === this.toString()
    );
  }

  /** 32 lowercase hex digits; stable, usable as a map key. */
  toString(): string {
    if (this.cachedHex === undefined) this.cachedHex = Buffer.from(this.bytes).toString("hex");
    return this.cachedHex;
  }

  toJSON(): string {
    return this.toString();
  }

  /** Parses 32 hex digits into the 16 wire bytes, with an error that names the id kind. */
  protected static parseHex(kind: string, hex: string): Uint8Array {
    if (typeof hex !== "string" || !HEX.test(hex)) {
      throw new IllegalArgumentError(
        `${kind} must be 32 lowercase hex digits, got ${JSON.stringify(hex)}`,
      );
    }
    return Uint8Array.from(Buffer.from(hex, "hex"));
  }
}
