import { crc32 } from "@sluice/network/plugin";

/** The CRC32 and byte count of one subpartition's record stream, as JSON. */
export interface SubpartitionChecksumJSON {
  readonly crc: number;
  readonly bytes: number;
}

/**
 * End-to-end integrity of one subpartition: the CRC32 and byte count of the framed records, as
 * the producer wrote them and as the consumer read them. Buffer boundaries differ on the way
 * (the worker re-packs records into its sorted file), the byte stream does not.
 */
export class SubpartitionChecksum {
  private crc = 0;
  private bytes = 0;

  /** Adds the next bytes of the stream. */
  update(data: Uint8Array): void {
    if (data.byteLength === 0) return;
    this.crc = crc32(data, this.crc);
    this.bytes += data.byteLength;
  }

  toJSON(): SubpartitionChecksumJSON {
    return { crc: this.crc, bytes: this.bytes };
  }

  /** True when this stream equals what `expected` describes. */
  matches(expected: SubpartitionChecksumJSON): boolean {
    return expected.crc === this.crc && expected.bytes === this.bytes;
  }
}

/** `N bytes, CRC32 xxxxxxxx`, how messages show a checksum. */
export function describeChecksum(checksum: SubpartitionChecksumJSON): string {
  return `${checksum.bytes} bytes, CRC32 ${(checksum.crc >>> 0).toString(16).padStart(8, "0")}`;
}
