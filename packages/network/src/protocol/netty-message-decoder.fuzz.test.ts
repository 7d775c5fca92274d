import { type InputChannelID, NetworkBufferPool } from "@sluice/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { NettyMessage } from "./netty-message.js";
import { NettyMessageDecoder } from "./netty-message-decoder.js";
import {
  clientBoundArb,
  encodeFrame,
  recycleMessage,
  serverBoundArb,
  splitAt,
} from "./test-support/messages.js";
import "@sluice/core/testing";

/**
 * Hostile input: whatever bytes arrive, the decoder emits valid messages or
 * throws a ProtocolError — never another exception — never asks for more than maxFrameSize bytes,
 * and leaks no buffer.
 */

const MAX_FRAME_SIZE = 2048;
const SEGMENT_SIZE = 4096;
const RUNS = Number(process.env.SLUICE_FUZZ_RUNS ?? 1000);

type Mutation = { at: number; value: number };

/**
 * Decodes `chunks` with a pool-backed allocator whose requests are recorded; returns the number
 * of frames handled (emitted or skipped) and the error, if any. Every emitted buffer is recycled, the decoder destroyed, and the pool must be full.
 */
function runDecoder(
  side: "client" | "server",
  chunks: readonly Uint8Array[],
): { frames: number; error: unknown } {
  const pool = new NetworkBufferPool(8, SEGMENT_SIZE);
  const local = pool.createBufferPool(8, 8);
  const requested: number[] = [];
  const messages: NettyMessage[] = [];
  let alternate = false;
  let skipped = 0;
  let error: unknown;
  const decoder = new NettyMessageDecoder({
    side,
    maxFrameSize: MAX_FRAME_SIZE,
    allocator: {
      allocateDataBuffer(_receiverId: InputChannelID, size: number) {
        requested.push(size);
        // Alternate between a known and an unknown channel to exercise skipping too.
        alternate = !alternate;
        return alternate ? local.requestBuffer() : undefined;
      },
      onSkipped() {
        skipped++;
      },
    },
    onMessage(msg) {
      messages.push(msg);
      recycleMessage(msg);
    },
  });
  try {
    for (const chunk of chunks) decoder.feed(chunk);
  } catch (err) {
    error = err;
    expect(err).toMatchObject({ code: "SLUICE_ERR_PROTOCOL", name: "ProtocolError" });
  } finally {
    decoder.destroy();
  }
  for (const size of requested) {
    expect(size).toBeGreaterThan(0);
    expect(size).toBeLessThanOrEqual(MAX_FRAME_SIZE);
  }
  for (const msg of messages) expect(typeof msg.id).toBe("number");
  pool.destroy();
  expect(pool).toHaveAllSegmentsAvailable();
  return { frames: messages.length + skipped, error };
}

/** How many whole frames the valid stream prefix `bytes` holds. */
function completeFrames(bytes: Buffer): number {
  let count = 0;
  let offset = 0;
  while (offset + 4 <= bytes.length) {
    const length = bytes.readInt32BE(offset);
    if (offset + length > bytes.length) break;
    offset += length;
    count++;
  }
  return count;
}

const sideArb = fc.constantFrom("client" as const, "server" as const);
const cutsArb = fc.array(fc.nat(), { maxLength: 8 });

const messagesFor = (side: "client" | "server") =>
  fc.array(side === "client" ? clientBoundArb(1500) : serverBoundArb, {
    minLength: 1,
    maxLength: 5,
  });

const sideAndMessages = sideArb.chain((side) =>
  messagesFor(side).map((messages) => ({ side, stream: Buffer.concat(messages.map(encodeFrame)) })),
);

function chunked(stream: Buffer, cuts: number[]): Buffer[] {
  return splitAt(
    stream,
    cuts.map((c) => c % (stream.length + 1)),
  );
}

describe("NettyMessageDecoder under hostile input", () => {
  it("either decodes or throws a ProtocolError on random bytes", () => {
    fc.assert(
      fc.property(sideArb, fc.uint8Array({ maxLength: 512 }), cutsArb, (side, bytes, cuts) => {
        runDecoder(side, chunked(Buffer.from(bytes), cuts));
      }),
      { numRuns: RUNS },
    );
  });

  it("either decodes or throws a ProtocolError on random bytes after a valid magic header", () => {
    fc.assert(
      fc.property(
        sideArb,
        fc.integer({ min: -16, max: 4096 }),
        fc.nat(15),
        fc.uint8Array({ maxLength: 300 }),
        (side, length, id, body) => {
          const header = Buffer.alloc(9);
          header.writeInt32BE(length, 0);
          header.writeUInt32BE(0xbadc0ffe, 4);
          header[8] = id;
          runDecoder(side, [header, Buffer.from(body)]);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("survives valid frames whose length, magic, id or body bytes were mutated", () => {
    const mutationArb = fc.record({ at: fc.nat(), value: fc.nat(255) });
    fc.assert(
      fc.property(
        sideAndMessages,
        fc.array(mutationArb, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        cutsArb,
        ({ side, stream }, mutations: Mutation[], headerOnly, cuts) => {
          const mutated = Buffer.from(stream);
          for (const { at, value } of mutations) {
            // Mostly hit the first frame header (length 0–3, magic 4–7, id 8).
            const index = headerOnly ? at % 9 : at % mutated.length;
            mutated[index] = value;
          }
          runDecoder(side, chunked(mutated, cuts));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("decodes the whole frames of a truncated stream, emits nothing for the cut one, leaks nothing", () => {
    fc.assert(
      fc.property(sideAndMessages, fc.nat(), cutsArb, ({ side, stream }, cut, cuts) => {
        const truncated = stream.subarray(0, cut % stream.length);
        const { frames, error } = runDecoder(side, chunked(truncated, cuts));
        expect(error).toBeUndefined();
        expect(frames).toBe(completeFrames(truncated));
      }),
      { numRuns: RUNS },
    );
  });

  it("rejects oversized frame lengths before allocating", () => {
    fc.assert(
      fc.property(
        sideAndMessages,
        fc.integer({ min: MAX_FRAME_SIZE + 1, max: 0x7fffffff }),
        ({ side, stream }, length) => {
          const mutated = Buffer.from(stream);
          mutated.writeInt32BE(length, 0);
          let allocations = 0;
          const decoder = new NettyMessageDecoder({
            side,
            maxFrameSize: MAX_FRAME_SIZE,
            allocator: {
              allocateDataBuffer() {
                allocations++;
                return undefined;
              },
            },
            onMessage() {
              throw new Error("no message may be emitted");
            },
          });
          expect(() => decoder.feed(mutated)).toThrow(
            expect.objectContaining({
              code: "SLUICE_ERR_PROTOCOL",
              message: expect.stringContaining(`exceeds the max frame size ${MAX_FRAME_SIZE}`),
            }),
          );
          expect(allocations).toBe(0);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
