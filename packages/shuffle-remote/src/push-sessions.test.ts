/**
 * Push sessions hold a worker's sort buffers: how long, how many per peer, and who gets them
 * when they are short. Idle producers speak the push protocol by hand over real sockets.
 */
import { ErrorCodes } from "@sluice/core";
import type { PartitionDescriptor } from "@sluice/runtime-api";
import { connectRawTcp, type RawPeer, rawTcpPeer } from "@sluice/shuffle-tck/transport";
import { afterEach, describe, expect, it } from "vitest";
import { PushAdmission } from "./push-admission.js";
import type { RemoteShuffleDescriptor } from "./remote-shuffle-descriptor.js";
import { FrameType } from "./remote-shuffle-messages.js";
import type { ShuffleWorker } from "./shuffle-worker.js";
import { decodeFrames, encodeFrame, errorFrameOf, openFrame } from "./test-support/frames.js";
import {
  filesOf,
  partitionDescriptor,
  RemoteShuffleHarness,
  recordsOf,
  register,
  waitFor,
  writePartition,
} from "./test-support/remote-shuffle-harness.js";

let harness: RemoteShuffleHarness | undefined;
const peers: RawPeer[] = [];
const timers: NodeJS.Timeout[] = [];

afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  for (const peer of peers.splice(0)) peer.destroy();
  await harness?.close();
  harness = undefined;
});

/** Four partitions' sort buffers fill the worker: 1024 segments of 8 kb, 256 per partition. */
const FOUR_SESSIONS = {
  "remote-shuffle.worker.memory.writing-size": "8mb",
  "taskmanager.network.sort-shuffle.min-buffers": 256,
  "remote-shuffle.worker.push-session.idle-timeout": "1s",
};

/** A DATA frame of `records` for subpartition 0. */
function dataFrame(records: readonly Buffer[]): Buffer {
  const head = Buffer.alloc(4);
  return encodeFrame(FrameType.DATA, Buffer.concat([head, ...records]));
}

/** A producer by hand: OPEN, then whatever the test sends. Resolves once the push is OPENED. */
async function openRawPush(
  worker: ShuffleWorker,
  partition: PartitionDescriptor,
  descriptor: RemoteShuffleDescriptor,
): Promise<RawPeer> {
  const peer = rawTcpPeer(await connectRawTcp(worker.address.rpcPort));
  peers.push(peer);
  await peer.send(openFrame(partition, descriptor));
  await waitFor(
    () => decodeFrames(Buffer.concat(peer.received)).some((f) => f.type === FrameType.OPENED),
    "OPENED",
  );
  return peer;
}

describe("push sessions on a shuffle worker", () => {
  it("ends idle push sessions after remote-shuffle.worker.push-session.idle-timeout, deletes their partial data, and gives their sort buffers to a push that waited for them", async () => {
    harness = await RemoteShuffleHarness.start(FOUR_SESSIONS);
    const worker = await harness.startWorker();
    const idle: RawPeer[] = [];
    for (let i = 0; i < 4; i++) {
      const partition = partitionDescriptor(1);
      const peer = await openRawPush(worker, partition, await register(harness, partition));
      // More than a sort buffer holds: the partition spills to its files, then the producer
      // goes silent for good.
      const records = recordsOf(0, 40_000);
      for (let at = 0; at < records.length; at += 500) {
        await peer.send(dataFrame(records.slice(at, at + 500)));
      }
      // Alive until the legitimate push below waits, however slow the machine is.
      timers.push(setInterval(() => void peer.send(encodeFrame(FrameType.KEEP_ALIVE)), 100));
      idle.push(peer);
    }
    await waitFor(() => filesOf(worker).length === 8, "the idle sessions' spill files");
    expect(worker.numberOfPushSessions).toBe(4);

    // Every sort buffer is taken: a legitimate push waits for them instead of failing.
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    const pushed = writePartition(environment, partition, descriptor, [recordsOf(0, 2_000)]);
    await waitFor(() => worker.numberOfWaitingPushes === 1, "the push to wait");
    // Now the four producers go silent for good.
    for (const timer of timers.splice(0)) clearInterval(timer);
    await pushed;

    for (const peer of idle) {
      await peer.closed;
      const error = errorFrameOf(Buffer.concat(peer.received));
      expect(error?.code).toBe(ErrorCodes.TIMEOUT);
      expect(error?.message).toContain("remote-shuffle.worker.push-session.idle-timeout");
    }
    expect(worker.storedPartitions().map((p) => p.partitionId.toString())).toEqual([
      descriptor.resultPartitionId.toString(),
    ]);
    // Only the stored partition's data and index file are left.
    await waitFor(() => filesOf(worker).length === 2, "the idle sessions' files to go");
    expect(worker.numberOfPushSessions).toBe(0);
  }, 60_000);

  it("keeps the session of a producer that sends nothing for longer than the idle timeout but is alive (keep-alives)", async () => {
    harness = await RemoteShuffleHarness.start({
      "remote-shuffle.worker.push-session.idle-timeout": "300ms",
    });
    const worker = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    const records = recordsOf(0, 1_000);
    await writePartition(environment, partition, descriptor, [records], async () => {
      // A slow producer: nothing to push for five idle timeouts. Only time passing shows it.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    });
    expect(worker.storedPartitions()).toHaveLength(1);
  }, 30_000);

  it("refuses push sessions beyond remote-shuffle.worker.max-push-sessions-per-peer with SLUICE_ERR_LIMIT_EXCEEDED", async () => {
    harness = await RemoteShuffleHarness.start({
      "remote-shuffle.worker.max-push-sessions-per-peer": 2,
    });
    const worker = await harness.startWorker();
    for (let i = 0; i < 2; i++) {
      const partition = partitionDescriptor(1);
      await openRawPush(worker, partition, await register(harness, partition));
    }
    const partition = partitionDescriptor(1);
    const peer = rawTcpPeer(await connectRawTcp(worker.address.rpcPort));
    peers.push(peer);
    await peer.send(openFrame(partition, await register(harness, partition)));
    await peer.closed;
    const error = errorFrameOf(Buffer.concat(peer.received));
    expect(error?.code).toBe(ErrorCodes.LIMIT_EXCEEDED);
    expect(error?.message).toContain("remote-shuffle.worker.max-push-sessions-per-peer");
    expect(worker.numberOfPushSessions).toBe(2);
  }, 30_000);

  it("fails a push that waited twice remote-shuffle.worker.push-session.idle-timeout for sort buffers held by live producers with SLUICE_ERR_INSUFFICIENT_BUFFERS", async () => {
    harness = await RemoteShuffleHarness.start(FOUR_SESSIONS);
    const worker = await harness.startWorker();
    for (let i = 0; i < 4; i++) {
      const partition = partitionDescriptor(1);
      const peer = await openRawPush(worker, partition, await register(harness, partition));
      // Alive, with nothing to send.
      timers.push(setInterval(() => void peer.send(encodeFrame(FrameType.KEEP_ALIVE)), 100));
    }
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    const error = await writePartition(environment, partition, descriptor, [
      recordsOf(0, 100),
    ]).catch((e: unknown) => e as Error);
    expect(error).toMatchObject({ code: ErrorCodes.PARTITION_CONNECTION });
    expect((error as Error).cause).toMatchObject({ code: ErrorCodes.INSUFFICIENT_BUFFERS });
    expect((error as Error).message).toContain("remote-shuffle.worker.memory.writing-size");
    expect(worker.numberOfPushSessions).toBe(4);
  }, 30_000);
});

describe("PushAdmission", () => {
  function admission(free: { segments: number }) {
    return new PushAdmission({
      maxSessionsPerPeer: 10,
      maxWaitMs: 60_000,
      unreservedSegments: () => free.segments,
      totalSegments: 4,
      name: () => "worker",
    });
  }

  it("gives freed sort buffers to the waiting peer that holds the fewest sessions, before an older waiter of a busier peer", () => {
    const free = { segments: 2 };
    const gate = admission(free);
    const admitted: string[] = [];
    const ask = (peer: string, name: string) =>
      gate.request(
        { peer, segments: 1 },
        () => {
          free.segments--;
          admitted.push(name);
        },
        (error) => {
          throw error;
        },
      );
    const a1 = { peer: "a", segments: 1 };
    ask("a", "a1");
    ask("a", "a2");
    ask("a", "a3"); // waits: nothing free
    ask("b", "b1"); // waits, behind a3
    expect(admitted).toEqual(["a1", "a2"]);
    // One of a's sessions ends: b holds none, so b goes first.
    free.segments++;
    gate.release(a1);
    expect(admitted).toEqual(["a1", "a2", "b1"]);
    free.segments++;
    gate.release(a1);
    expect(admitted).toEqual(["a1", "a2", "b1", "a3"]);
    expect(gate.numberOfWaiting).toBe(0);
  });
});
