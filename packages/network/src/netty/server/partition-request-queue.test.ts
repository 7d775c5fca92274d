import {
  ErrorCodes,
  frameRecord,
  InputChannelID,
  type NetworkBufferPool,
  PartitionNotFoundError,
  ProducerFailedError,
  ResultPartitionID,
} from "@sluice/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PipelinedResultPartition } from "../../partition/pipelined-result-partition.js";
import { ResultPartitionManager } from "../../partition/result-partition-manager.js";
import {
  type BacklogAnnouncement,
  type BufferResponse,
  type ErrorResponse,
  errorFromErrorResponse,
  MessageId,
  type NettyMessage,
  NettyMessageDecoder,
} from "../../protocol/index.js";
import { FakeConnection } from "../../test-support/fake-connection.js";
import { buildPipelinedResultPartition } from "../../testing/index.js";
import { CreditBasedSequenceNumberingViewReader } from "./credit-based-sequence-numbering-view-reader.js";
import { PartitionRequestQueue } from "./partition-request-queue.js";
import "@sluice/core/testing";
import { networkBufferPoolPerTest } from "../../test-support/network-buffer-pool-per-test.js";

const SEGMENT = 64;
const FULL = SEGMENT - 4;

interface Setup {
  readonly global: NetworkBufferPool;
  readonly manager: ResultPartitionManager;
  readonly connection: FakeConnection;
  readonly queue: PartitionRequestQueue;
}

const newGlobalPool = networkBufferPoolPerTest();

afterEach(() => {
  vi.useRealTimers();
});

function setUp(): Setup {
  const global = newGlobalPool(64, SEGMENT);
  const connection = new FakeConnection();
  return {
    global,
    manager: new ResultPartitionManager(),
    connection,
    queue: new PartitionRequestQueue(connection),
  };
}

function newPartition(s: Setup, subpartitions = 1): PipelinedResultPartition {
  return buildPipelinedResultPartition({
    networkBufferPool: s.global,
    partitionManager: s.manager,
    numberOfSubpartitions: subpartitions,
    maxBuffers: 40,
  });
}

/** What the server handler does on a PartitionRequest. */
function request(
  s: Setup,
  partitionId: ResultPartitionID,
  subpartition: number,
  credit: number,
  timeoutMs = 10_000,
): CreditBasedSequenceNumberingViewReader {
  const reader = new CreditBasedSequenceNumberingViewReader(new InputChannelID(), credit, s.queue);
  s.queue.notifyReaderCreated(reader);
  reader.requestSubpartitionViewOrRegisterListener(s.manager, partitionId, subpartition, timeoutMs);
  return reader;
}

/** Decodes everything written so far (and forgets it); payload buffers are recycled. */
function written(s: Setup): NettyMessage[] {
  const messages: NettyMessage[] = [];
  const decoder = new NettyMessageDecoder({
    side: "client",
    maxFrameSize: 1 << 20,
    onMessage: (message) => {
      if (message.id === MessageId.BUFFER_RESPONSE) message.buffer?.recycleBuffer();
      messages.push(message);
    },
  });
  decoder.feed(Buffer.concat(s.connection.writes.splice(0)));
  decoder.destroy();
  return messages;
}

function bufferResponses(messages: NettyMessage[]): BufferResponse[] {
  return messages.filter((m): m is BufferResponse => m.id === MessageId.BUFFER_RESPONSE);
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await turn();
}

function finish(s: Setup): void {
  s.connection.completeWrites();
  s.queue.releaseAllResources();
  expect(s.queue.getNumberOfReaders()).toBe(0);
  s.manager.shutdown();
  expect(s.global).toHaveAllSegmentsAvailable();
}

describe("PartitionRequestQueue", () => {
  it("corks each write turn, so the BufferResponses of several readers leave in one batch", async () => {
    const s = setUp();
    const partition = newPartition(s, 3);
    for (let sub = 0; sub < 3; sub++) {
      for (let i = 0; i < 2; i++) partition.emitRecord(frameRecord(new Uint8Array(FULL)), sub);
    }
    const partitionId = partition.partitionId;
    for (let sub = 0; sub < 3; sub++) request(s, partitionId, sub, 10);
    await turns(3);
    expect(bufferResponses(written(s))).toHaveLength(6);
    // One turn wrote every buffer of every reader between one cork() and its uncork().
    expect(s.connection.corkedBatches).toEqual([6]);
    finish(s);
  });

  it("writes only while the connection is writable and resumes on drain", async () => {
    const s = setUp();
    const partition = newPartition(s);
    for (let i = 0; i < 5; i++) partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    s.connection.writesUntilFull = 2;
    const reader = request(s, partition.partitionId, 0, 10);
    await turn();
    const first = bufferResponses(written(s));
    expect(first.map((m) => m.sequenceNumber)).toEqual([0, 1]);
    await turns(5);
    expect(s.connection.writes).toEqual([]); // nothing while unwritable

    s.connection.writable = true;
    s.connection.writesUntilFull = Number.POSITIVE_INFINITY;
    s.queue.onDrain();
    await turn();
    const rest = bufferResponses(written(s));
    expect(rest.map((m) => m.sequenceNumber)).toEqual([2, 3, 4]);
    expect([...first, ...rest].map((m) => m.backlog)).toEqual([4, 3, 2, 1, 0]);
    for (const m of rest) {
      expect(m.receiverId.equals(reader.receiverId)).toBe(true);
      expect(m.bufferSize).toBe(SEGMENT);
    }
    expect(reader.getNumCreditsAvailable()).toBe(5);
    finish(s);
  });

  it("keeps the payload until the transport wrote it", async () => {
    const s = setUp();
    const partition = newPartition(s);
    partition.emitRecord(frameRecord(new Uint8Array(FULL).fill(7)), 0);
    request(s, partition.partitionId, 0, 2);
    await turn();
    const pool = partition.getBufferPool();
    expect(pool?.bestEffortGetNumOfUsedBuffers()).toBe(1);
    s.connection.completeWrites();
    expect(pool?.bestEffortGetNumOfUsedBuffers()).toBe(0);
    const [response] = bufferResponses(written(s));
    expect(response?.bufferSize).toBe(SEGMENT);
    finish(s);
  });

  it("tells when every write has called back, with the written buffers recycled by then", async () => {
    const s = setUp();
    const partition = newPartition(s);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    request(s, partition.partitionId, 0, 2);
    await turn();
    expect(bufferResponses(written(s))).toHaveLength(2);
    let done = false;
    const writesDone = s.queue.whenWritesDone().then(() => {
      done = true;
      // Resolved after the write callbacks recycled what they carried.
      expect(partition.getBufferPool()?.bestEffortGetNumOfUsedBuffers()).toBe(0);
    });
    await turns(2);
    expect(done).toBe(false);
    s.connection.completeWrites();
    await writesDone;
    expect(done).toBe(true);
    await expect(s.queue.whenWritesDone()).resolves.toBeUndefined();
    finish(s);
  });

  it("serves readers round-robin on a shared connection", async () => {
    const s = setUp();
    const partition = newPartition(s, 3);
    for (let sub = 0; sub < 3; sub++) {
      for (let i = 0; i < 3; i++) partition.emitRecord(frameRecord(new Uint8Array(FULL)), sub);
    }
    const readers = [0, 1, 2].map((sub) => request(s, partition.partitionId, sub, 10));
    await turn();
    const order = bufferResponses(written(s)).map((m) =>
      readers.findIndex((r) => r.receiverId.equals(m.receiverId)),
    );
    expect(order).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
    finish(s);
  });

  it("sends data only against credit and resumes on AddCredit; events need no credit", async () => {
    const s = setUp();
    const partition = newPartition(s);
    for (let i = 0; i < 3; i++) partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    const reader = request(s, partition.partitionId, 0, 1);
    await turns(3);
    expect(bufferResponses(written(s)).map((m) => m.sequenceNumber)).toEqual([0]);

    s.queue.addCreditOrResumeConsumption(reader.receiverId, (r) => r.addCredit(1));
    await turns(3);
    expect(bufferResponses(written(s)).map((m) => m.sequenceNumber)).toEqual([1]);

    s.queue.addCreditOrResumeConsumption(reader.receiverId, (r) => r.addCredit(1));
    partition.finish(); // EndOfPartition behind the last buffer
    await turns(3);
    const last = bufferResponses(written(s));
    expect(last.map((m) => [m.sequenceNumber, m.buffer?.isBuffer()])).toEqual([
      [2, true],
      [3, false],
    ]);
    expect(reader.getNumCreditsAvailable()).toBe(0);
    finish(s);
  });

  it("announces the backlog when the consumer has no exclusive buffers and no credit", async () => {
    const s = setUp();
    const partition = newPartition(s, 2);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    partition.emitRecord(frameRecord(new Uint8Array(10)), 0); // unfinished: not in the backlog yet
    const reader = request(s, partition.partitionId, 0, 0);
    await turn(); // control messages go out with the next write turn
    const announced = written(s);
    expect(announced).toHaveLength(1);
    const announcement = announced[0] as BacklogAnnouncement;
    expect(announcement.id).toBe(MessageId.BACKLOG_ANNOUNCEMENT);
    expect(announcement.backlog).toBe(2);
    expect(announcement.receiverId.equals(reader.receiverId)).toBe(true);
    await turns(3);
    expect(written(s)).toEqual([]); // no data without credit

    // The consumer borrows two floating buffers and announces them.
    s.queue.addCreditOrResumeConsumption(reader.receiverId, (r) => r.addCredit(2));
    await turns(3);
    const sent = bufferResponses(written(s));
    expect(sent.map((m) => [m.sequenceNumber, m.backlog])).toEqual([
      [0, 1],
      [1, 0],
    ]);

    // Credit is used up again; a flush makes the last buffer count: announced as backlog 1.
    partition.flush(0);
    await turn();
    const again = written(s);
    expect(again.map((m) => m.id)).toEqual([MessageId.BACKLOG_ANNOUNCEMENT]);
    expect((again[0] as BacklogAnnouncement).backlog).toBe(1);

    // A consumer with exclusive buffers gets its credit back by recycling: no announcement.
    for (let i = 0; i < 3; i++) partition.emitRecord(frameRecord(new Uint8Array(FULL)), 1);
    request(s, partition.partitionId, 1, 1);
    await turns(3);
    const other = written(s);
    expect(other.map((m) => m.id)).toEqual([MessageId.BUFFER_RESPONSE]);
    finish(s);
  });

  it("announces a buffer that a record filled exactly without waiting for a flush", async () => {
    const s = setUp();
    const partition = newPartition(s);
    const reader = request(s, partition.partitionId, 0, 0);
    await turn();
    expect(written(s)).toEqual([]);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0); // finished at once, nothing open after it
    await turn();
    const [announcement] = written(s) as BacklogAnnouncement[];
    expect(announcement?.id).toBe(MessageId.BACKLOG_ANNOUNCEMENT);
    expect(announcement?.backlog).toBe(1);
    expect(announcement?.receiverId.equals(reader.receiverId)).toBe(true);
    finish(s);
  });

  it("keeps at most one backlog announcement per reader queued while the peer does not read", async () => {
    const s = setUp();
    const partition = newPartition(s);
    s.connection.writable = false;
    const reader = request(s, partition.partitionId, 0, 0);
    for (let i = 0; i < 5; i++) partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    await turns(2);
    expect(s.connection.writes).toEqual([]);
    expect(s.queue.getQueuedOutboundBytes()).toBe(29); // one BacklogAnnouncement frame
    s.connection.drain();
    s.queue.onDrain();
    await turn();
    const announced = written(s) as BacklogAnnouncement[];
    expect(announced.map((m) => [m.id, m.backlog])).toEqual([
      [MessageId.BACKLOG_ANNOUNCEMENT, 5], // the backlog when it was written, not when queued
    ]);
    expect(announced[0]?.receiverId.equals(reader.receiverId)).toBe(true);
    finish(s);
  });

  it("answers a partition request that timed out with an ErrorResponse for that receiver", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const s = setUp();
    const missing = new ResultPartitionID();
    const reader = request(s, missing, 0, 2, 5_000);
    expect(s.queue.getNumberOfReaders()).toBe(1);
    vi.advanceTimersByTime(4_999);
    expect(s.connection.writes).toEqual([]);
    vi.advanceTimersByTime(1);
    await turn();
    const [message] = written(s) as ErrorResponse[];
    expect(message?.id).toBe(MessageId.ERROR_RESPONSE);
    expect(message?.receiverId?.equals(reader.receiverId)).toBe(true);
    const error = errorFromErrorResponse(message as ErrorResponse);
    expect(error).toBeInstanceOf(PartitionNotFoundError);
    expect(error.code).toBe(ErrorCodes.PARTITION_NOT_FOUND);
    expect(error.message).toContain(missing.toString());
    expect(s.queue.getNumberOfReaders()).toBe(0);
    expect(reader.isReleased()).toBe(true);
    finish(s);
  });

  it("stops waiting for a late partition once the request was cancelled", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const s = setUp();
    const pool = s.global;
    const late = buildPipelinedResultPartition({
      networkBufferPool: pool,
      partitionManager: s.manager,
      maxBuffers: 8,
      setup: false,
    });
    const cancelled = request(s, late.partitionId, 0, 2, 5_000);
    s.queue.cancel(cancelled.receiverId);
    expect(cancelled.isReleased()).toBe(true);
    expect(vi.getTimerCount()).toBe(0); // the wait was given up with the request

    // The partition registers afterwards: the cancelled request must not consume it...
    late.setup();
    expect(late.isReleased()).toBe(false);
    // ...so a new request still gets its view, and nothing is answered to the old receiver.
    const fresh = request(s, late.partitionId, 0, 2);
    expect(fresh.getView()).toBeDefined();
    vi.advanceTimersByTime(10_000);
    expect(written(s)).toEqual([]);
    finish(s);
  });

  it("tells the consumer when the producer failed, with the producer's message", async () => {
    const s = setUp();
    const partition = newPartition(s);
    const reader = request(s, partition.partitionId, 0, 2);
    partition.emitRecord(frameRecord(new Uint8Array(10)), 0);
    partition.fail(new ProducerFailedError("task 'map (1/2)' failed: out of cheese"));
    await turns(2);
    const [message] = written(s) as ErrorResponse[];
    expect(message?.id).toBe(MessageId.ERROR_RESPONSE);
    expect(message?.receiverId?.equals(reader.receiverId)).toBe(true);
    const error = errorFromErrorResponse(message as ErrorResponse);
    expect(error.code).toBe(ErrorCodes.PRODUCER_FAILED);
    expect(error.message).toContain("out of cheese");
    // As in Flink, the failed reader stays registered (released) until the consumer cancels
    // it, so credit that crossed the error on the wire is not taken for a protocol violation.
    expect(reader.isReleased()).toBe(true);
    expect(s.queue.getNumberOfReaders()).toBe(1);
    expect(s.queue.addCreditOrResumeConsumption(reader.receiverId, (r) => r.addCredit(1))).toBe(
      true,
    );
    await turns(2);
    expect(written(s)).toEqual([]); // answered once, not again per credit
    s.queue.cancel(reader.receiverId);
    expect(s.queue.getNumberOfReaders()).toBe(0);
    finish(s);
  });

  it("releases the view of a cancelled request and of every reader on close", async () => {
    const s = setUp();
    const partition = newPartition(s, 2);
    for (let i = 0; i < 3; i++) partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    const cancelled = request(s, partition.partitionId, 0, 0);
    const kept = request(s, partition.partitionId, 1, 2);
    written(s);
    s.queue.cancel(cancelled.receiverId);
    expect(cancelled.isReleased()).toBe(true);
    expect(partition.getBufferPool()?.getNumberOfBuffersOfChannel(0)).toBe(0);
    expect(partition.isReleased()).toBe(false);
    s.queue.releaseAllResources();
    expect(kept.isReleased()).toBe(true);
    expect(partition.isReleased()).toBe(true);
    await turns(2);
    expect(s.connection.writes).toEqual([]); // a closed queue writes nothing
    finish(s);
  });
});

describe("PartitionRequestQueue write turn failures", () => {
  it("fails only the channel whose BufferResponse the encoder rejects, recycling its buffer, and serves the others", async () => {
    const s = setUp();
    const partition = newPartition(s, 2);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 1);
    const broken = request(s, partition.partitionId, 0, 2);
    const healthy = request(s, partition.partitionId, 1, 2);
    // A sequence number beyond int32 (what a counter that never wraps reaches after 2^31
    // buffers): the encoder refuses it inside the write turn, a setImmediate callback.
    const getNextBuffer = broken.getNextBuffer.bind(broken);
    vi.spyOn(broken, "getNextBuffer").mockImplementation(() => {
      const next = getNextBuffer();
      return next === undefined ? undefined : { ...next, sequenceNumber: 2 ** 31 };
    });
    await turns(3);
    const messages = written(s);
    const [response] = bufferResponses(messages);
    expect(response?.receiverId.equals(healthy.receiverId)).toBe(true);
    const errors = messages.filter((m): m is ErrorResponse => m.id === MessageId.ERROR_RESPONSE);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.receiverId?.equals(broken.receiverId)).toBe(true);
    const error = errorFromErrorResponse(errors[0] as ErrorResponse);
    expect(error.code).toBe(ErrorCodes.ILLEGAL_STATE);
    expect(error.message).toContain(
      `cannot send buffer ${2 ** 31} to receiver ${broken.receiverId}`,
    );
    expect(error.message).toContain("sequenceNumber");
    expect(broken.isReleased()).toBe(true);
    expect(healthy.isReleased()).toBe(false);
    expect(s.connection.destroyed).toBe(false);
    finish(s);
  });

  it("fails the connection, not the process, when a write turn throws outside any reader", async () => {
    const s = setUp();
    const partition = newPartition(s, 1);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    partition.emitRecord(frameRecord(new Uint8Array(FULL)), 0);
    const reader = request(s, partition.partitionId, 0, 0);
    vi.spyOn(reader, "getBacklog").mockImplementation(() => {
      throw new Error("backlog broke on purpose");
    });
    // The backlog announcement is encoded in the write turn, which now throws.
    await turns(2);
    expect(s.connection.destroyedWith).toMatchObject({
      code: ErrorCodes.ILLEGAL_STATE,
      message: expect.stringMatching(
        /failed to write to 10\.0\.0\.2:40000: backlog broke on purpose/,
      ),
    });
    expect(reader.isReleased()).toBe(true);
    expect(s.queue.getNumberOfReaders()).toBe(0);
    finish(s);
  });
});
