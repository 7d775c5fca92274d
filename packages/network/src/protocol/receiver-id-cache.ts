import { InputChannelID } from "@sluice/core";

/** Slots of the receiver-id cache (a power of two). */
const RECEIVER_CACHE_SLOTS = 64;

/**
 * A direct-mapped cache of decoded InputChannelIDs, keyed by their 16 bytes. Frames on one
 * connection go to a few channels, and building an id (a copy plus object set-up) costs several
 * times more than comparing four int32s; the ids are immutable, so sharing one instance is safe
 * (and lets its cached hex string be reused by whoever keys maps with it). Bounded: a miss
 * overwrites its slot.
 */
export class ReceiverIdCache {
  private readonly words = new Int32Array(RECEIVER_CACHE_SLOTS * 4);
  private readonly ids: (InputChannelID | undefined)[] = new Array(RECEIVER_CACHE_SLOTS).fill(
    undefined,
  );

  read(src: Buffer, at: number): InputChannelID {
    // An InputChannelID (RECEIVER_ID_BYTES) is read as four int32 words.
    const w0 = src.readInt32BE(at);
    const w1 = src.readInt32BE(at + 4);
    const w2 = src.readInt32BE(at + 8);
    const w3 = src.readInt32BE(at + 12);
    const slot = Math.imul(w0 ^ w1 ^ w2 ^ w3, 0x9e3779b1) >>> 26; // top 6 bits: 0..63
    const base = slot * 4;
    const words = this.words;
    const cached = this.ids[slot];
    if (
      cached !== undefined &&
      words[base] === w0 &&
      words[base + 1] === w1 &&
      words[base + 2] === w2 &&
      words[base + 3] === w3
    ) {
      return cached;
    }
    const id = InputChannelID.readFrom(src, at);
    words[base] = w0;
    words[base + 1] = w1;
    words[base + 2] = w2;
    words[base + 3] = w3;
    this.ids[slot] = id;
    return id;
  }
}
