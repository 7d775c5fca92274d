import type { TransportConnection } from "@sluice/network/plugin";
import {
  createResultPartitionDeploymentDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
} from "@sluice/runtime-api";
import { TcpTransport } from "@sluice/shuffle-tcp";
import { afterEach, describe, expect, it } from "vitest";
import { FrameConnection, MAX_FRAME_SIZE } from "./frame-connection.js";
import { FrameType } from "./remote-shuffle-messages.js";
import { SubpartitionChecksum } from "./subpartition-checksum.js";
import {
  partitionDescriptor,
  RemoteShuffleHarness,
  readPartition,
  recordsOf,
  register,
  waitFor,
} from "./test-support/remote-shuffle-harness.js";

let harness: RemoteShuffleHarness | undefined;
let raw: TransportConnection | undefined;

afterEach(async () => {
  raw?.destroy();
  raw = undefined;
  await harness?.close();
  harness = undefined;
});

/** One encoded frame, as FrameConnection writes it: u32 length, u8 type, payload. */
function encodeFrame(type: number, payload: Uint8Array): Buffer {
  const header = Buffer.allocUnsafe(5);
  header.writeUInt32BE(payload.byteLength + 1, 0);
  header.writeUInt8(type, 4);
  return Buffer.concat([header, payload]);
}

/** A DATA frame of `records` for `subpartition`. */
function dataFrame(subpartition: number, records: readonly Buffer[]): Buffer {
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(subpartition, 0);
  return encodeFrame(FrameType.DATA, Buffer.concat([head, ...records]));
}

/**
 * A producer speaking the push protocol by hand over a real socket, so that a test decides how
 * the frames are cut into writes. It records every frame the worker sends back.
 */
async function openPush(h: RemoteShuffleHarness, subpartitions: number) {
  const worker = await h.startWorker();
  const partition = partitionDescriptor(subpartitions);
  const descriptor = await register(h, partition);
  const connection = await new TcpTransport().connect({
    host: worker.address.host,
    port: worker.address.rpcPort,
    connectTimeoutMs: 10_000,
    maxFrameSize: MAX_FRAME_SIZE,
  });
  raw = connection;
  const received: { type: number; payload: Buffer }[] = [];
  const frames = new FrameConnection(
    connection,
    {
      // Payloads are views valid during the call: kept as copies.
      onFrame: (type, payload) => received.push({ type, payload: Buffer.from(payload) }),
      onClose: () => {},
    },
    { maxFrameSize: MAX_FRAME_SIZE },
  );
  frames.sendJson(FrameType.OPEN, {
    descriptor: ResultPartitionDeploymentDescriptorCodec.toJSON(
      createResultPartitionDeploymentDescriptor(partition, descriptor, 128),
    ),
  });
  await waitFor(() => received.some((f) => f.type === FrameType.OPENED), "OPENED");
  const acknowledged = () =>
    received
      .filter((f) => f.type === FrameType.ACK)
      .reduce((sum, f) => sum + f.payload.readUInt32BE(0), 0);
  return { worker, partition, descriptor, connection, received, acknowledged };
}

describe("the push protocol on a shuffle worker", () => {
  it("returns the credit of many stored DATA frames in a few ACKs, not one per frame", async () => {
    harness = await RemoteShuffleHarness.start();
    const push = await openPush(harness, 1);
    const records = recordsOf(0, 4_000);
    // 200 frames of 20 records (68 bytes each), all in one write.
    const frames: Buffer[] = [];
    for (let i = 0; i < records.length; i += 20)
      frames.push(dataFrame(0, records.slice(i, i + 20)));
    push.connection.write([Buffer.concat(frames)]);
    const bytes = records.reduce((sum, r) => sum + r.byteLength, 0);
    await waitFor(() => push.acknowledged() === bytes, "every stored byte acknowledged");
    const acks = push.received.filter((f) => f.type === FrameType.ACK).length;
    expect(acks).toBeGreaterThan(0);
    expect(acks).toBeLessThanOrEqual(frames.length / 4);
  }, 60_000);

  it("stores frames cut into pieces of every size, across reads, as the producer sent them", async () => {
    harness = await RemoteShuffleHarness.start();
    const push = await openPush(harness, 2);
    const consumerSide = await harness.startEnvironment();
    const records = [recordsOf(0, 3_000), recordsOf(1, 2_000, 200)];
    const checksums = records.map((r) => {
      const checksum = new SubpartitionChecksum();
      for (const record of r) checksum.update(record);
      return checksum.toJSON();
    });
    const frames: Buffer[] = [];
    for (let i = 0; i < 3_000; i += 50) {
      frames.push(dataFrame(0, records[0]?.slice(i, i + 50) ?? []));
      if (i < 2_000) frames.push(dataFrame(1, records[1]?.slice(i, i + 50) ?? []));
    }
    frames.push(encodeFrame(FrameType.FINISH, Buffer.from(JSON.stringify({ checksums }))));
    // Writes of 1 to 3,000 bytes, each its own read on the worker's side when it is slow: frames
    // whole in one read, headers cut, and payloads spread over many reads all occur.
    const stream = Buffer.concat(frames);
    let size = 1;
    for (let offset = 0; offset < stream.byteLength; offset += size) {
      size = (size * 7 + 13) % 3_000 || 1;
      push.connection.write([stream.subarray(offset, offset + size)]);
      if (offset % 5 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor(() => push.received.some((f) => f.type === FrameType.FINISHED), "FINISHED");
    expect(push.received.filter((f) => f.type === FrameType.ERROR)).toEqual([]);
    const read = await readPartition(consumerSide, push.partition, push.descriptor, 2);
    expect(read).toEqual(records.map((r) => Buffer.concat(r)));
  }, 60_000);
});
