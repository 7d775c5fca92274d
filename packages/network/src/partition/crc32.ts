import { createRequire } from "node:module";
import { crc32 as zlibCrc32 } from "node:zlib";

/** The CRC32 (IEEE 802.3, zlib's) of `data`, continuing `previous` (the CRC of the bytes before). */
export type Crc32 = (data: Uint8Array, previous?: number) => number;

/** The native binding's signature: the same checksum, the same way to continue one. */
interface Crc32Binding {
  crc32(input: Uint8Array, initialState?: number): number;
}

/**
 * `moduleName`'s CRC32 when its native binding loads on this platform, else zlib's (the same
 * checksum, computed a byte table at a time; `@node-rs/crc32` computes it with the CPU's
 * carry-less multiply, about twice the bytes per CPU-second here).
 */
export function loadCrc32(moduleName: string): Crc32 {
  let binding: Crc32Binding;
  try {
    binding = createRequire(import.meta.url)(moduleName) as Crc32Binding;
  } catch {
    return zlibCrc32;
  }
  const native = binding.crc32;
  return (data, previous = 0) => native(data, previous);
}

/**
 * The CRC32 of stored buffers (their headers' checksum) and of the remote shuffle's
 * subpartition streams: computed once per byte written and once per byte read, so its speed is
 * a share of a blocking partition's CPU time.
 */
export const crc32: Crc32 = loadCrc32("@node-rs/crc32");
