/**
 * Whether `[offset, offset + length)` is an integer range within `array`: the one check behind
 * every method that reads or writes part of a caller's byte array.
 */
export function isByteRangeWithin(array: Uint8Array, offset: number, length: number): boolean {
  return (
    Number.isInteger(offset) &&
    Number.isInteger(length) &&
    offset >= 0 &&
    length >= 0 &&
    offset + length <= array.length
  );
}
