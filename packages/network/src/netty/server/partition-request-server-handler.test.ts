import { monitorEventLoopDelay } from "node:perf_hooks";
import {
  ErrorCodes,
  EventSerializer,
  frameRecord,
  IllegalArgumentError,
  InputChannelID,
  LimitExceededError,
  NetworkBufferPool,
  ProtocolError,
  ResultPartitionID,
  type SluiceError,
  TaskEvent,
  TimeoutError,
} from "@sluice/core";
import { expectSluiceError } from "@sluice/core/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ResultPartitionManager } from "../../partition/result-partition-manager.js";
import {
  type ErrorResponse,
  encodeMessage,
  errorFromErrorResponse,
  MessageId,
  type NettyMessage,
  NettyMessageDecoder,
  type NonBufferMessage,
} from "../../protocol/index.js";
import { FakeConnection } from "../../test-support/fake-connection.js";
import { buildPipelinedResultPartition } from "../../testing/index.js";
import { CreditBasedSequenceNumberingViewReader } from "./credit-based-sequence-numbering-view-reader.js";
import {
  PartitionRequestServerHandler,
  type ServerHandlerOptions,
} from "./partition-request-server-handler.js";

const OPTIONS: ServerHandlerOptions = {
  maxFrameSize: 1 << 20,
  partitionRequestTimeoutMs: 60_000,
  maxPartitionRequestsPerConnection: 100_000,
};

const managers: ResultPartitionManager[] = [];

afterEach(() => {
  vi.useRealTimers();
  for (const manager of managers.splice(0)) manager.shutdown();
});

function newManager(): ResultPartitionManager {
  const manager = new ResultPartitionManager();
  managers.push(manager);
  return manager;
}

/** A handler for `connection` with the test options and `options` on top. */
function handlerOn(
  connection: FakeConnection,
  options: Partial<ServerHandlerOptions> = {},
  manager = newManager(),
): PartitionRequestServerHandler {
  return new PartitionRequestServerHandler(connection, manager, undefined, {
    ...OPTIONS,
    ...options,
  });
}

function frames(messages: readonly NonBufferMessage[]): Buffer {
  return Buffer.concat(messages.map((m) => encodeMessage(m)));
}

function partitionRequest(partitionId: ResultPartitionID, credit = 2): NonBufferMessage {
  return {
    id: MessageId.PARTITION_REQUEST,
    partitionId,
    subpartitionIndexSet: { start: 0, end: 0 },
    receiverId: new InputChannelID(),
    credit,
  };
}

function taskEventRequest(): NonBufferMessage {
  return {
    id: MessageId.TASK_EVENT_REQUEST,
    event: EventSerializer.toSerializedEvent(new TaskEvent("ping", new Uint8Array(8))),
    partitionId: new ResultPartitionID(),
    receiverId: new InputChannelID(),
  };
}

/** Decodes (and forgets) what the handler wrote. */
function answers(connection: FakeConnection): NettyMessage[] {
  const messages: NettyMessage[] = [];
  const decoder = new NettyMessageDecoder({
    side: "client",
    maxFrameSize: 1 << 20,
    onMessage: (message) => messages.push(message),
  });
  decoder.feed(Buffer.concat(connection.writes.splice(0)));
  decoder.destroy();
  return messages;
}

function errorsIn(messages: readonly NettyMessage[]): ErrorResponse[] {
  return messages.filter((m): m is ErrorResponse => m.id === MessageId.ERROR_RESPONSE);
}

/** The first ErrorResponse the handler wrote, and the error it stands for. */
function firstErrorIn(connection: FakeConnection): {
  readonly response: ErrorResponse | undefined;
  readonly error: SluiceError;
} {
  const [response] = errorsIn(answers(connection));
  return { response, error: errorFromErrorResponse(response as ErrorResponse) };
}

/** Completes the handler's writes to `connection` until `count` ErrorResponses were written. */
async function expectErrorAnswers(connection: FakeConnection, count: number): Promise<void> {
  const received: NettyMessage[] = [];
  await expect
    .poll(
      () => {
        connection.completeWrites();
        received.push(...answers(connection));
        return errorsIn(received).length;
      },
      { interval: 5 },
    )
    .toBe(count);
}

/** The handler closed `connection` with a fatal TimeoutError that names the option `key`. */
function expectClosedByTimeout(connection: FakeConnection, key: string): void {
  expect(connection.closed).toBe(true);
  const { error } = firstErrorIn(connection);
  expect(error).toBeInstanceOf(TimeoutError);
  expect(error.message).toContain(key);
}

/** Fakes the clocks the handler's idle and frame-read timeouts run on. */
function useFakeClock(): void {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("PartitionRequestServerHandler", () => {
  it("releases 10^5 waiting partition requests of interleaved connections without blocking the event loop", async () => {
    const manager = newManager();
    const missing = new ResultPartitionID();
    const connections = [new FakeConnection("peer-a:1"), new FakeConnection("peer-b:2")];
    const handlers = connections.map((connection) => handlerOn(connection, {}, manager));
    // The requests of both connections wait for the same partition id, interleaved, as when
    // several peers ask at once.
    const perConnection = 50_000;
    const batch = 1_000;
    for (let i = 0; i < perConnection; i += batch) {
      for (const handler of handlers) {
        handler.onData(frames(Array.from({ length: batch }, () => partitionRequest(missing))));
      }
    }
    expect(handlers.map((h) => h.getNumberOfReaders())).toEqual([perConnection, perConnection]);
    expect(manager.getNumberOfWaitingRequests()).toBe(2 * perConnection);

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    // The monitor records from its second tick on: wait until it is measuring.
    while (delay.count === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // The second connection goes first: each of its requests sits behind the other's in the
    // registration order, the case a scan of one list per partition id makes quadratic.
    for (const connection of [...connections].reverse()) {
      connection.destroy();
      await turn();
      await turn();
    }
    delay.disable();
    expect(handlers.map((h) => h.getNumberOfReaders())).toEqual([0, 0]);
    expect(manager.getNumberOfWaitingRequests()).toBe(0);
    // Generous: linear work takes tens of milliseconds here; the quadratic scan took seconds.
    expect(delay.max / 1e6).toBeLessThan(1_000);
  });

  it("stops reading from a peer that does not read its replies once the outbound budget is used, and resumes when it drained", async () => {
    const connection = new FakeConnection();
    connection.writable = false; // the peer reads nothing
    const budget = 16 * 1024;
    const handler = handlerOn(connection, { maxOutboundBytes: budget });
    // Each TaskEventRequest for a partition nobody listens to earns an error response.
    let sent = 0;
    while (!connection.paused && sent < 10_000) {
      handler.onData(frames(Array.from({ length: 10 }, () => taskEventRequest())));
      sent += 10;
    }
    expect(connection.paused).toBe(true);
    expect(handler.isReadingPaused()).toBe(true);
    expect(handler.getQueuedOutboundBytes()).toBeGreaterThanOrEqual(budget);
    // Pausing takes effect between decoded slices of input: one slice of requests at most.
    expect(handler.getQueuedOutboundBytes()).toBeLessThan(2 * budget);
    await turn();
    expect(connection.writes).toEqual([]); // nothing is written while the peer does not read

    connection.drain();
    // Reading resumes; what was read but not decoded while paused is answered too.
    await expectErrorAnswers(connection, sent);
    expect(handler.getQueuedOutboundBytes()).toBe(0);
    expect(connection.paused).toBe(false);
    expect(connection.destroyed).toBe(false);
  });

  it("decodes no more of a large chunk once reading paused, and the rest after it resumed", async () => {
    const connection = new FakeConnection();
    connection.writable = false;
    const budget = 16 * 1024;
    const handler = handlerOn(connection, { maxOutboundBytes: budget });
    // One large chunk, as one WebSocket message can be: it is read whole, decoded in part.
    handler.onData(frames(Array.from({ length: 2_000 }, () => taskEventRequest())));
    expect(connection.paused).toBe(true);
    expect(connection.destroyed).toBe(false);
    expect(handler.getQueuedOutboundBytes()).toBeLessThan(2 * budget);
    connection.drain();
    await expectErrorAnswers(connection, 2_000);
  });

  it("closes a connection whose queued replies exceed twice the outbound budget", async () => {
    const connection = new FakeConnection();
    connection.writable = false;
    // So small that the replies to one decoded slice of input already exceed twice of it.
    const budget = 4 * 1024;
    const handler = handlerOn(connection, { maxOutboundBytes: budget });
    handler.onData(frames(Array.from({ length: 1_000 }, () => taskEventRequest())));
    expect(connection.destroyed).toBe(true);
    const cause = expectSluiceError(
      connection.destroyedWith,
      LimitExceededError,
      ErrorCodes.LIMIT_EXCEEDED,
    );
    expect(cause.message).toContain("taskmanager.network.max-outbound-bytes-per-connection");
    await turn();
    expect(handler.getQueuedOutboundBytes()).toBe(0);
  });

  it("fails the connection when AddCredit names a receiver without a partition request, as Flink does", async () => {
    const connection = new FakeConnection();
    const handler = handlerOn(connection);
    handler.onData(
      frames([{ id: MessageId.ADD_CREDIT, credit: 3, receiverId: new InputChannelID() }]),
    );
    const { response: fatal, error } = firstErrorIn(connection);
    expect(fatal?.receiverId).toBeUndefined();
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error.message).toContain("AddCredit for receiver");
    expect(connection.closed).toBe(true);
  });

  it("answers a subpartition range with an error for that receiver only", async () => {
    const connection = new FakeConnection();
    const handler = handlerOn(connection);
    const receiverId = new InputChannelID();
    handler.onData(
      frames([
        {
          id: MessageId.PARTITION_REQUEST,
          partitionId: new ResultPartitionID(),
          subpartitionIndexSet: { start: 0, end: 3 },
          receiverId,
          credit: 2,
        },
      ]),
    );
    await turn();
    const { response: answer, error } = firstErrorIn(connection);
    expect(answer?.receiverId?.equals(receiverId)).toBe(true);
    expect(error).toBeInstanceOf(IllegalArgumentError);
    expect(error.message).toContain("[0, 3]");
    expect(connection.closed).toBe(false);
    expect(handler.getNumberOfReaders()).toBe(0);
  });

  it("closes a connection without partition requests that sent nothing for the idle timeout", async () => {
    useFakeClock();
    const connection = new FakeConnection();
    handlerOn(connection, { idleTimeoutMs: 1_000 });
    vi.advanceTimersByTime(999);
    expect(connection.closed).toBe(false);
    vi.advanceTimersByTime(2);
    // The verdict comes in the check phase, after the poll phase read what had arrived.
    expect(connection.closed).toBe(false);
    await turn();
    expectClosedByTimeout(connection, "taskmanager.network.idle-connection-timeout");
  });

  it("keeps a connection that waits for its partitions open past the idle timeout", async () => {
    useFakeClock();
    const connection = new FakeConnection();
    const handler = handlerOn(connection, { idleTimeoutMs: 1_000 });
    handler.onData(frames([partitionRequest(new ResultPartitionID())]));
    vi.advanceTimersByTime(5_000);
    expect(connection.closed).toBe(false);
    expect(handler.getNumberOfReaders()).toBe(1);
  });

  it("closes a connection whose started frame does not complete within the frame read timeout", async () => {
    useFakeClock();
    const connection = new FakeConnection();
    const handler = handlerOn(connection, { frameReadTimeoutMs: 1_000, idleTimeoutMs: 60_000 });
    const frame = frames([partitionRequest(new ResultPartitionID())]);
    // A slow peer: one byte every 300 ms keeps the connection busy but never ends the frame.
    for (let i = 0; i < 3; i++) {
      handler.onData(frame.subarray(i, i + 1));
      vi.advanceTimersByTime(300);
    }
    expect(connection.closed).toBe(false);
    vi.advanceTimersByTime(200);
    await turn();
    expectClosedByTimeout(connection, "taskmanager.network.frame-read-timeout");
  });

  it("does not time out a peer that sends whole frames split across chunks", async () => {
    useFakeClock();
    const connection = new FakeConnection();
    const handler = handlerOn(connection, { frameReadTimeoutMs: 1_000 });
    // Every chunk ends in the middle of a frame, but every frame completes quickly.
    const stream = frames(
      Array.from({ length: 20 }, () => partitionRequest(new ResultPartitionID())),
    );
    const step = 150; // not a multiple of the 97-byte frame
    for (let at = 0; at < stream.length; at += step) {
      handler.onData(stream.subarray(at, at + step));
      vi.advanceTimersByTime(400);
    }
    expect(connection.closed).toBe(false);
    expect(handler.getNumberOfReaders()).toBe(20);
  });

  it("answers a write turn that throws with a fatal ErrorResponse and closes only that connection", async () => {
    const manager = newManager();
    const global = new NetworkBufferPool(8, 64);
    const partition = buildPipelinedResultPartition({
      networkBufferPool: global,
      partitionManager: manager,
      maxBuffers: 4,
    });
    partition.emitRecord(frameRecord(new Uint8Array(60)), 0);
    const broken = new FakeConnection("peer-a:1");
    const healthy = new FakeConnection("peer-b:2");
    const handler = handlerOn(broken, {}, manager);
    const other = handlerOn(healthy, {}, manager);
    // Without credit the reader's backlog is announced; that announcement is encoded in the
    // write turn, a setImmediate callback, where reading the backlog now throws.
    const getBacklog = vi
      .spyOn(CreditBasedSequenceNumberingViewReader.prototype, "getBacklog")
      .mockImplementationOnce(() => 1)
      .mockImplementationOnce(() => {
        throw new Error("backlog broke on purpose");
      });
    handler.onData(frames([partitionRequest(partition.partitionId, 0)]));
    await turn();
    getBacklog.mockRestore();
    const { response: fatal, error } = firstErrorIn(broken);
    expect(fatal?.receiverId).toBeUndefined();
    expect(error.code).toBe(ErrorCodes.ILLEGAL_STATE);
    expect(error.message).toContain("failed to write to peer-a:1: backlog broke on purpose");
    expect(broken.closed).toBe(true);
    expect(healthy.closed).toBe(false);
    expect(other.getNumberOfReaders()).toBe(0);
    partition.release();
    expect(global).toHaveAllSegmentsAvailable();
    global.destroy();
  });

  it("testAcknowledgeAllRecordsProcessed: AckAllUserRecordsProcessed of a reader resolves its partition's all-data-processed future", async () => {
    const manager = newManager();
    const global = new NetworkBufferPool(8, 64);
    const partition = buildPipelinedResultPartition({
      networkBufferPool: global,
      partitionManager: manager,
      maxBuffers: 4,
    });
    const connection = new FakeConnection();
    const handler = handlerOn(connection, {}, manager);
    const receiverId = new InputChannelID();
    handler.onData(
      frames([
        {
          id: MessageId.PARTITION_REQUEST,
          partitionId: partition.partitionId,
          subpartitionIndexSet: { start: 0, end: 0 },
          receiverId,
          credit: 2,
        },
      ]),
    );
    await turn();
    expect(handler.getNumberOfReaders()).toBe(1);
    let processed = false;
    void partition.getAllDataProcessedFuture().then(() => {
      processed = true;
    });
    await turn();
    expect(processed).toBe(false);
    handler.onData(frames([{ id: MessageId.ACK_ALL_USER_RECORDS_PROCESSED, receiverId }]));
    await expect.poll(() => processed).toBe(true);
    expect(connection.closed).toBe(false);
    partition.release();
    expect(global).toHaveAllSegmentsAvailable();
    global.destroy();
  });
});
