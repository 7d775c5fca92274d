import {
  BufferReorderingError,
  CancelledError,
  CheckpointAlignment,
  CheckpointBarrier,
  DataType,
  DEFAULT_CHECKPOINT_OPTIONS,
  ErrorCodes,
  EventSerializer,
  FreeingBufferRecycler,
  IllegalStateError,
  InsufficientBuffersError,
  type LocalBufferPool,
  MemorySegment,
  NetworkBuffer,
  NetworkBufferPool,
  PartitionConnectionError,
  PartitionNotFoundError,
  ResultPartitionID,
  type SluiceError,
  TaskEvent,
} from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import type { ExecutionState } from "@sluice/runtime-api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { networkBufferPoolPerTest } from "../test-support/network-buffer-pool-per-test.js";
import { RecordingChannelStateWriter } from "../test-support/recording-channel-state-writer.js";
import { ConnectionID } from "./connection-id.js";
import type { ConnectionManager } from "./connection-manager.js";
import type { PartitionRequestClient } from "./partition-request-client.js";
import {
  type RemoteChannelGate,
  RemoteInputChannel,
  type RemoteInputChannelOptions,
} from "./remote-input-channel.js";

const SEGMENT = 64;

/** Records what RemoteInputChannel calls on its PartitionRequestClient. */
class FakePartitionRequestClient implements PartitionRequestClient {
  readonly requested: RemoteInputChannel[] = [];
  readonly closed: RemoteInputChannel[] = [];
  readonly taskEvents: TaskEvent[] = [];
  creditNotifications = 0;
  resumes = 0;
  allRecordsProcessedAcks = 0;
  retriggered = 0;
  readonly newBufferSizes: number[] = [];

  requestSubpartition(channel: RemoteInputChannel): void {
    this.requested.push(channel);
  }
  retriggerSubpartitionRequest(_channel: RemoteInputChannel): void {
    this.retriggered++;
  }
  notifyCreditAvailable(_channel: RemoteInputChannel): void {
    this.creditNotifications++;
  }
  resumeConsumption(_channel: RemoteInputChannel): void {
    this.resumes++;
  }
  acknowledgeAllRecordsProcessed(_channel: RemoteInputChannel): void {
    this.allRecordsProcessedAcks++;
  }
  notifyNewBufferSize(_channel: RemoteInputChannel, bufferSize: number): void {
    this.newBufferSizes.push(bufferSize);
  }
  sendTaskEvent(_partitionId: ResultPartitionID, event: TaskEvent): void {
    this.taskEvents.push(event);
  }
  close(channel: RemoteInputChannel): void {
    this.closed.push(channel);
  }
  isClosed(): boolean {
    return false;
  }
}

/** A ConnectionManager handing out `clients` in turn (the last one from then on). */
function connectionManagerOf(
  first: PartitionRequestClient,
  ...later: PartitionRequestClient[]
): ConnectionManager {
  const next = [...later];
  let current = first;
  return {
    createPartitionRequestClient: () => {
      const handedOut = current;
      current = next.shift() ?? current;
      return Promise.resolve(handedOut);
    },
  };
}

/** A RemoteInputChannel reached through `connections`; a test states only what it varies. */
function remoteChannel(
  gate: RemoteChannelGate,
  pool: NetworkBufferPool,
  connections: ConnectionManager,
  settings: {
    readonly channelIndex?: number;
    readonly partitionId?: ResultPartitionID;
    readonly exclusive?: number;
    readonly maxBackoffMs?: number;
    readonly options?: RemoteInputChannelOptions;
  } = {},
): RemoteInputChannel {
  return new RemoteInputChannel(
    gate,
    settings.channelIndex ?? 0,
    settings.partitionId ?? new ResultPartitionID(),
    0,
    new ConnectionID("127.0.0.1", 4711),
    connections,
    pool,
    settings.exclusive ?? 2,
    { initialMs: 100, maxMs: settings.maxBackoffMs ?? 1_000 },
    settings.options,
  );
}

interface Setup {
  readonly global: NetworkBufferPool;
  readonly gatePool: LocalBufferPool;
  readonly client: FakePartitionRequestClient;
  readonly channel: RemoteInputChannel;
  readonly gate: RemoteChannelGate & { nonEmpty: number; priorityEvents: number[] };
}

const newGlobalPool = networkBufferPoolPerTest();

async function setUp(options: { exclusive?: number; floatingMax?: number } = {}): Promise<Setup> {
  const global = newGlobalPool(32, SEGMENT);
  const gatePool = global.createBufferPool(1, options.floatingMax ?? 8, { name: "gate pool" });
  const client = new FakePartitionRequestClient();
  const gate = {
    owningTaskName: "consumer",
    nonEmpty: 0,
    priorityEvents: [] as number[],
    notifyChannelNonEmpty() {
      this.nonEmpty++;
    },
    notifyPriorityEvent(_channel: unknown, sequenceNumber: number) {
      this.priorityEvents.push(sequenceNumber);
    },
    getBufferPool: () => gatePool,
  };
  const channel = remoteChannel(gate, global, connectionManagerOf(client), {
    exclusive: options.exclusive ?? 2,
  });
  channel.setup();
  channel.requestSubpartitions();
  await Promise.resolve();
  await Promise.resolve();
  return { global, gatePool, client, channel, gate };
}

/** Another channel on the same gate, pools and client. */
async function secondChannel(s: Setup): Promise<RemoteInputChannel> {
  const channel = remoteChannel(s.gate, s.global, connectionManagerOf(s.client), {
    channelIndex: 1,
  });
  channel.setup();
  channel.requestSubpartitions();
  await Promise.resolve();
  await Promise.resolve();
  return channel;
}

/** The decoder's part: fills the channel's next credited buffer and hands it over. */
function receive(
  channel: RemoteInputChannel,
  sequenceNumber: number,
  backlog: number,
): NetworkBuffer {
  const buffer = channel.requestBuffer();
  if (buffer === undefined) throw new Error("no credit for an incoming buffer");
  buffer.writableView().fill(sequenceNumber, 0, 10);
  buffer.setSize(10);
  channel.onBuffer(buffer, sequenceNumber, backlog);
  return buffer;
}

/** An event buffer of `type` as the decoder hands it over: unpooled, outside any credit. */
function eventBuffer(type: DataType): NetworkBuffer {
  return new NetworkBuffer(MemorySegment.allocateUnpooled(8), FreeingBufferRecycler, type, 8);
}

/** The gate's part: takes the next buffer of the channel. */
function take(channel: RemoteInputChannel): NetworkBuffer {
  const next = channel.getNextBuffer();
  if (next === undefined) throw new Error("nothing received");
  return next.buffer;
}

function finish(s: Setup): void {
  s.channel.releaseAllResources();
  s.gatePool.destroy();
  expect(s.global).toHaveAllSegmentsAvailable();
}

describe("RemoteInputChannel credit", () => {
  it("starts with its exclusive buffers as the initial credit of the partition request", async () => {
    const s = await setUp({ exclusive: 2 });
    expect(s.client.requested).toEqual([s.channel]);
    expect(s.channel.initialCredit).toBe(2);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(2);
    // Exclusive segments come straight from the NetworkBufferPool; nothing is floating yet.
    expect(s.global.getNumberOfUsedMemorySegments()).toBe(2);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(0);
    // The initial credit travels in the request: nothing to announce.
    expect(s.channel.getUnannouncedCredit()).toBe(0);
    expect(s.client.creditNotifications).toBe(0);
    finish(s);
  });

  it("requests floating buffers for the sender's backlog until available = backlog + exclusive", async () => {
    const s = await setUp({ exclusive: 2 });
    s.channel.onSenderBacklog(3);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(5);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(3);
    expect(s.channel.getUnannouncedCredit()).toBe(3);

    // Already enough for this backlog; a smaller backlog does not give buffers back either.
    s.channel.onSenderBacklog(3);
    s.channel.onSenderBacklog(1);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(5);

    // A buffer arrives (a floating one is used first) announcing a backlog of 4.
    const buffer = receive(s.channel, 0, 4);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(6);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(5); // 4 available + 1 received
    expect(s.gate.nonEmpty).toBe(1);
    expect(take(s.channel)).toBe(buffer);
    buffer.recycleBuffer();
    finish(s);
  });

  it("relies on floating buffers alone when it has no exclusive buffers", async () => {
    const s = await setUp({ exclusive: 0 });
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(0);
    s.channel.onSenderBacklog(2); // a BacklogAnnouncement
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(2);
    expect(s.client.creditNotifications).toBe(1);
    expect(s.channel.getAndResetUnannouncedCredit()).toBe(2);
    finish(s);
  });

  it("announces credit only on the 0 → >0 transition and coalesces increments into one AddCredit", async () => {
    const s = await setUp({ exclusive: 2 });
    s.channel.onSenderBacklog(1);
    expect(s.client.creditNotifications).toBe(1);
    s.channel.onSenderBacklog(2);
    s.channel.onSenderBacklog(4);
    expect(s.client.creditNotifications).toBe(1);
    expect(s.channel.getUnannouncedCredit()).toBe(4);
    // The client takes the credit when it writes the message: all increments in one AddCredit.
    expect(s.channel.getAndResetUnannouncedCredit()).toBe(4);
    expect(s.channel.getAndResetUnannouncedCredit()).toBe(0);
    // After the write, the next increment is a new 0 → >0 transition.
    s.channel.onSenderBacklog(5);
    expect(s.client.creditNotifications).toBe(2);
    expect(s.channel.getAndResetUnannouncedCredit()).toBe(1);
    finish(s);
  });

  it("gives one credit back for a recycled exclusive buffer", async () => {
    const s = await setUp({ exclusive: 2, floatingMax: 1 });
    // Exhaust the gate's floating pool so no floating buffer gets in the way.
    const held = s.gatePool.requestBuffer() as NetworkBuffer;
    expect(held).toBeDefined();
    const buffer = receive(s.channel, 0, 0);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(1);
    expect(s.client.creditNotifications).toBe(0);

    take(s.channel).recycleBuffer();
    expect(buffer.isRecycled()).toBe(true);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(2);
    expect(s.client.creditNotifications).toBe(1);
    expect(s.channel.getAndResetUnannouncedCredit()).toBe(1);

    // The channel waited for a floating buffer; it no longer needs it and hands it back.
    held.recycleBuffer();
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(2);
    expect(s.channel.getUnannouncedCredit()).toBe(0);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(0);
    finish(s);
  });

  it("returns a floating buffer instead of announcing credit when it holds more than required", async () => {
    const s = await setUp({ exclusive: 2 });
    s.channel.onSenderBacklog(1);
    expect(s.channel.getAndResetUnannouncedCredit()).toBe(1);
    const first = receive(s.channel, 0, 0); // takes the floating buffer
    const second = receive(s.channel, 1, 0); // takes an exclusive one; a floating one refills
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(2);
    expect(s.channel.getAndResetUnannouncedCredit()).toBe(1);
    const notifications = s.client.creditNotifications;

    expect(take(s.channel)).toBe(first);
    first.recycleBuffer(); // floating: straight back to the gate pool
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(1);
    expect(take(s.channel)).toBe(second);
    second.recycleBuffer(); // exclusive: 3 available > 2 required → the floating one goes back
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(2);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(0);
    expect(s.channel.getUnannouncedCredit()).toBe(0);
    expect(s.client.creditNotifications).toBe(notifications);
    finish(s);
  });

  it("waits as a buffer listener when the floating pool is exhausted and announces the buffer it gets", async () => {
    const s = await setUp({ exclusive: 2, floatingMax: 1 });
    const held = s.gatePool.requestBuffer() as NetworkBuffer;
    s.channel.onSenderBacklog(2);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(2);
    expect(s.client.creditNotifications).toBe(0);

    held.recycleBuffer(); // goes to the waiting channel, not to the pool's free list
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(3);
    expect(s.gatePool.getNumberOfAvailableMemorySegments()).toBe(0);
    expect(s.client.creditNotifications).toBe(1);
    expect(s.channel.getAndResetUnannouncedCredit()).toBe(1);
    finish(s);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(0);
  });

  it("shares recycled floating buffers fairly among waiting channels", async () => {
    const s = await setUp({ exclusive: 2, floatingMax: 2 });
    const other = await secondChannel(s);
    const held = [s.gatePool.requestBuffer(), s.gatePool.requestBuffer()] as NetworkBuffer[];
    expect(s.gatePool.requestBuffer()).toBeUndefined();
    s.channel.onSenderBacklog(2); // both channels want two floating buffers
    other.onSenderBacklog(2);
    (held[0] as NetworkBuffer).recycleBuffer();
    (held[1] as NetworkBuffer).recycleBuffer();
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(3);
    expect(other.getNumberOfAvailableBuffers()).toBe(3);
    other.releaseAllResources();
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(4); // the released one went on
    finish(s);
  });

  it("fails with BufferReorderingError on a sequence number gap", async () => {
    const s = await setUp({ exclusive: 2 });
    receive(s.channel, 0, 0);
    const notified = s.gate.nonEmpty;
    const gap = receive(s.channel, 2, 0);
    expect(gap.isRecycled()).toBe(true);
    expect(s.gate.nonEmpty).toBe(notified + 1);
    const error = expectError(
      () => s.channel.getNextBuffer(),
      BufferReorderingError,
      ErrorCodes.BUFFER_REORDERING,
    );
    expect(error.message).toContain("expected sequence number 1, got 2");
    expect(error.message).toContain("127.0.0.1:4711");
    finish(s);
  });

  it("returns exclusive segments to the NetworkBufferPool and floating ones to the gate pool on release", async () => {
    const s = await setUp({ exclusive: 2 });
    receive(s.channel, 0, 0); // exclusive; a floating one is borrowed for the missing credit
    const heldExclusive = take(s.channel);
    receive(s.channel, 1, 0); // floating; another floating one is borrowed
    expect(s.channel.getNumberOfQueuedBuffers()).toBe(1);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(2);

    s.channel.releaseAllResources();
    expect(s.client.closed).toEqual([s.channel]);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(0);
    expect(s.channel.getNumberOfQueuedBuffers()).toBe(0);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(0);
    // Every segment is either free in the global pool, on the gate pool's free list, or the
    // exclusive buffer the task still holds.
    expect(s.global.getNumberOfUsedMemorySegments()).toBe(
      s.gatePool.getNumberOfAvailableMemorySegments() + 1,
    );
    heldExclusive.recycleBuffer(); // a released channel gives it straight back to the global pool
    expect(s.global.getNumberOfUsedMemorySegments()).toBe(
      s.gatePool.getNumberOfAvailableMemorySegments(),
    );

    // A released channel has no credit, and late data for it is dropped and recycled.
    expect(s.channel.requestBuffer()).toBeUndefined();
    const late = s.gatePool.requestBuffer() as NetworkBuffer;
    s.channel.onBuffer(late, 2, 0);
    expect(late.isRecycled()).toBe(true);
    expectError(() => s.channel.getNextBuffer(), CancelledError, ErrorCodes.CANCELLED);
    s.channel.releaseAllResources(); // idempotent
    expect(s.client.closed).toHaveLength(1);
    finish(s);
  });

  it("gives its floating buffers back to the gate when an aligned barrier arrives and it has no exclusive buffers", async () => {
    const s = await setUp({ exclusive: 0, floatingMax: 2 });
    s.channel.onSenderBacklog(2);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(2);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(2);
    s.channel.onBuffer(eventBuffer(DataType.ALIGNED_CHECKPOINT_BARRIER), 0, 0);
    // Blocked upstream: the buffers go back at once, and the credit they stood for is void.
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(0);
    expect(s.gatePool.bestEffortGetNumOfUsedBuffers()).toBe(0);
    expect(s.channel.getUnannouncedCredit()).toBe(0);
    take(s.channel).recycleBuffer();
    s.channel.resumeConsumption();
    expect(s.client.resumes).toBe(1);
    // After the resume the sender's backlog brings floating buffers again.
    s.channel.onSenderBacklog(1);
    expect(s.channel.getNumberOfAvailableBuffers()).toBe(1);
    finish(s);
  });

  it("keeps its floating buffers at a barrier that does not block, or when it has exclusive buffers", async () => {
    const zero = await setUp({ exclusive: 0, floatingMax: 2 });
    zero.channel.onSenderBacklog(2);
    zero.channel.onBuffer(eventBuffer(DataType.EVENT_BUFFER), 0, 2);
    expect(zero.channel.getNumberOfAvailableBuffers()).toBe(2);
    take(zero.channel).recycleBuffer();
    finish(zero);
    const exclusive = await setUp({ exclusive: 2, floatingMax: 2 });
    exclusive.channel.onSenderBacklog(2);
    expect(exclusive.channel.getNumberOfAvailableBuffers()).toBe(4);
    exclusive.channel.onBuffer(eventBuffer(DataType.ALIGNED_CHECKPOINT_BARRIER), 0, 0);
    expect(exclusive.channel.getNumberOfAvailableBuffers()).toBe(4);
    take(exclusive.channel).recycleBuffer();
    finish(exclusive);
  });

  it("forwards resume and task events to the client", async () => {
    const s = await setUp({ exclusive: 2 });
    s.channel.resumeConsumption();
    expect(s.client.resumes).toBe(1);
    const event = new TaskEvent("x", new Uint8Array(0));
    s.channel.sendTaskEvent(event);
    expect(s.client.taskEvents).toEqual([event]);
    finish(s);
  });
});

describe("RemoteInputChannel connection reuse", () => {
  it("asks for a fresh connection when the shared one was closed just before it got it", async () => {
    const pool = new NetworkBufferPool(8, SEGMENT);
    const gatePool = pool.createBufferPool(1, 4);
    const closedClient = Object.assign(new FakePartitionRequestClient(), { isClosed: () => true });
    const freshClient = new FakePartitionRequestClient();
    const gate = {
      owningTaskName: "consumer",
      notifyChannelNonEmpty() {},
      getBufferPool: () => gatePool,
    };
    const channel = remoteChannel(gate, pool, connectionManagerOf(closedClient, freshClient));
    channel.setup();
    channel.requestSubpartitions();
    for (let i = 0; i < 6; i++) await Promise.resolve();
    expect(closedClient.requested).toEqual([]);
    expect(freshClient.requested).toEqual([channel]);
    channel.releaseAllResources();
    gatePool.destroy();
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(8);
    pool.destroy();
  });
});

describe("RemoteInputChannel without a connection", () => {
  it("fails with a PartitionConnectionError that names its partition and the producer's address", async () => {
    const pool = new NetworkBufferPool(8, SEGMENT);
    const gatePool = pool.createBufferPool(1, 4);
    const refused = new PartitionConnectionError(
      "could not connect to 127.0.0.1:4711 over tcp after 1 attempt(s): ECONNREFUSED",
    );
    const connections: ConnectionManager = {
      createPartitionRequestClient: () => Promise.reject(refused),
    };
    const gate = {
      owningTaskName: "consumer",
      notifyChannelNonEmpty() {},
      getBufferPool: () => gatePool,
    };
    const partitionId = new ResultPartitionID();
    const channel = remoteChannel(gate, pool, connections, { partitionId });
    channel.setup();
    channel.requestSubpartitions();
    await expect.poll(() => channel.getError()).toBeDefined();
    const error = channel.getError() as SluiceError;
    expect(error).toBeInstanceOf(PartitionConnectionError);
    expect(error.code).toBe(ErrorCodes.PARTITION_CONNECTION);
    expect(error.message).toContain(partitionId.toString());
    expect(error.message).toContain("127.0.0.1:4711");
    expect(error.cause).toBe(refused);
    channel.releaseAllResources();
    gatePool.destroy();
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(8);
    pool.destroy();
  });
});

describe("RemoteInputChannel after PartitionNotFound", () => {
  function channelWith(state: ExecutionState, partitionRequestTimeoutMs = 10_000) {
    const pool = new NetworkBufferPool(8, SEGMENT);
    const gatePool = pool.createBufferPool(1, 4);
    const client = new FakePartitionRequestClient();
    const asked: ResultPartitionID[] = [];
    const gate = {
      owningTaskName: "consumer",
      nonEmpty: 0,
      notifyChannelNonEmpty() {
        this.nonEmpty++;
      },
      getBufferPool: () => gatePool,
      requestPartitionProducerState: async (id: ResultPartitionID) => {
        asked.push(id);
        return state;
      },
    };
    const channel = remoteChannel(gate, pool, connectionManagerOf(client), {
      maxBackoffMs: 400,
      options: { partitionRequestTimeoutMs },
    });
    channel.setup();
    channel.requestSubpartitions();
    const done = () => {
      channel.releaseAllResources();
      gatePool.destroy();
      expect(pool.getNumberOfAvailableMemorySegments()).toBe(8);
      pool.destroy();
    };
    return { channel, client, gate, asked, done };
  }

  afterEach(() => {
    vi.useRealTimers();
  });

  it("asks again at once while the producer runs, until the server's waits add up to twice the maximum backoff", async () => {
    vi.useFakeTimers();
    // partition-request-timeout 300 ms, backoff max 400 ms: a budget of 800 ms, so the third
    // PartitionNotFound (900 ms of waiting) is the last.
    const { channel, client, asked, done } = channelWith("RUNNING", 300);
    await vi.advanceTimersByTimeAsync(0);
    const notFound = () => new PartitionNotFoundError("partition not registered within 300 ms");
    for (let retry = 1; retry <= 2; retry++) {
      // The server kept the request for its whole timeout, then answered.
      await vi.advanceTimersByTimeAsync(300);
      channel.onError(notFound());
      await vi.advanceTimersByTimeAsync(0);
      expect(client.retriggered).toBe(retry);
    }
    expect(asked).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(300);
    channel.onError(notFound());
    await vi.advanceTimersByTimeAsync(0);
    expect(client.retriggered).toBe(2);
    expect(channel.getPartitionRequestRetries()).toBe(2);
    const error = expectError(
      () => channel.getNextBuffer(),
      PartitionNotFoundError,
      ErrorCodes.PARTITION_NOT_FOUND,
      channel.partitionId.toString(),
    );
    expect(error.message).toMatch(/after 3 partition request\(s\).*2 × 400 ms/);
    done();
  });

  it("waits out the rest of the partition-request timeout when the server answered early", async () => {
    vi.useFakeTimers();
    const { channel, client, done } = channelWith("RUNNING", 300);
    await vi.advanceTimersByTimeAsync(100);
    // Answered after 100 ms (the server's waiting requests were at their limit).
    channel.onError(new PartitionNotFoundError("not waiting for it"));
    await vi.advanceTimersByTimeAsync(199);
    expect(client.retriggered).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(client.retriggered).toBe(1);
    done();
  });

  it("fails on the first PartitionNotFound when the partition-request timeout is 0", async () => {
    const { channel, client, done } = channelWith("RUNNING", 0);
    await new Promise((r) => setImmediate(r));
    channel.onError(new PartitionNotFoundError("partition not registered"));
    await new Promise((r) => setImmediate(r));
    expect(client.retriggered).toBe(0);
    expect(channel.getError()).toMatchObject({
      code: ErrorCodes.PARTITION_NOT_FOUND,
      message: expect.stringContaining("after 1 partition request(s)"),
    });
    done();
  });

  it("fails at once, naming the producer's state, when the producer is no longer running", async () => {
    const { channel, client, done } = channelWith("FAILED");
    await Promise.resolve();
    await Promise.resolve();
    channel.onError(new PartitionNotFoundError("partition not registered within 10000 ms"));
    await new Promise((r) => setImmediate(r));
    expect(client.retriggered).toBe(0);
    expect((channel.getError() as Error).message).toContain("its producer is FAILED");
    done();
  });
});

describe("RemoteInputChannel exclusive buffers held by other pools", () => {
  /** A channel whose NetworkBufferPool lent every segment to another pool beyond its guarantee. */
  function busyWorker(timeoutMs: number) {
    const global = newGlobalPool(6, SEGMENT);
    const busy = global.createBufferPool(1, 6, { name: "busy output pool" });
    const held: NetworkBuffer[] = [];
    for (let b = busy.requestBuffer(); b !== undefined; b = busy.requestBuffer()) held.push(b);
    expect(global.getNumberOfAvailableMemorySegments()).toBe(0);
    const gatePool = global.createBufferPool(1, 1, { name: "gate pool" });
    const client = new FakePartitionRequestClient();
    const gate = {
      owningTaskName: "consumer",
      notifyChannelNonEmpty() {},
      getBufferPool: () => gatePool,
    };
    const channel = remoteChannel(gate, global, connectionManagerOf(client), {
      options: { buffersRequestTimeoutMs: timeoutMs },
    });
    return { held, client, channel, global };
  }

  it("waits for them to be recycled, then sends its partition request with them as credit", async () => {
    const { held, client, channel } = busyWorker(30_000);
    channel.setup();
    channel.requestSubpartitions();
    await new Promise((r) => setImmediate(r));
    expect(client.requested).toEqual([]); // no credit to announce yet
    expect(channel.getError()).toBeUndefined();
    for (const buffer of held) buffer.recycleBuffer();
    await expect.poll(() => client.requested).toEqual([channel]);
    expect(channel.getNumberOfAvailableBuffers()).toBe(2);
    channel.releaseAllResources();
  });

  it("fails with InsufficientBuffersError naming the timeout key when they are not recycled in time", async () => {
    const { held, client, channel } = busyWorker(20);
    channel.setup();
    channel.requestSubpartitions();
    await expect.poll(() => channel.getError()).toBeDefined();
    const error = expectError(
      () => channel.getNextBuffer(),
      InsufficientBuffersError,
      ErrorCodes.INSUFFICIENT_BUFFERS,
    );
    expect(error.message).toContain("taskmanager.network.memory.buffers-request-timeout");
    expect(client.requested).toEqual([]);
    channel.releaseAllResources();
    for (const buffer of held) buffer.recycleBuffer();
  });
});

const UNALIGNED = { ...DEFAULT_CHECKPOINT_OPTIONS, alignment: CheckpointAlignment.UNALIGNED };
const TIMEOUTABLE = { ...DEFAULT_CHECKPOINT_OPTIONS, alignedCheckpointTimeout: 10n };

/** A barrier as the decoder hands it over (priority for unaligned barriers, as sent). */
function barrierBuffer(id: number, options = UNALIGNED): NetworkBuffer {
  const barrier = new CheckpointBarrier(BigInt(id), 0n, options);
  return EventSerializer.toBuffer(barrier, options.alignment === CheckpointAlignment.UNALIGNED);
}

/** Takes everything queued: data as its first byte (the sequence number), events by kind. */
function drain(channel: RemoteInputChannel): (number | string)[] {
  const out: (number | string)[] = [];
  for (let next = channel.getNextBuffer(); next !== undefined; next = channel.getNextBuffer()) {
    const buffer = next.buffer;
    if (buffer.isBuffer()) out.push(buffer.readableView()[0] as number);
    else {
      const event = EventSerializer.fromBuffer(buffer);
      out.push(
        event.kind === "EventAnnouncement" ? `announce ${event.sequenceNumber}` : event.kind,
      );
    }
    buffer.recycleBuffer();
  }
  return out;
}

describe("RemoteInputChannel priority events and channel state", () => {
  it("puts a priority barrier at the head of its queue, behind earlier priority events only", async () => {
    const s = await setUp({ exclusive: 4 });
    receive(s.channel, 0, 0);
    receive(s.channel, 1, 0);
    s.channel.onBuffer(barrierBuffer(1), 2, 0);
    s.channel.onBuffer(barrierBuffer(2), 3, 0);
    // The gate hears of the first priority event only; the second queues behind it.
    expect(s.gate.priorityEvents).toEqual([2]);
    const first = s.channel.getNextBuffer();
    expect(first?.morePriorityEvents).toBe(true);
    first?.buffer.recycleBuffer();
    expect(drain(s.channel)).toEqual(["CheckpointBarrier", 0, 1]);
    finish(s);
  });

  it("announces a timeoutable barrier ahead of the data and moves it there on conversion", async () => {
    const s = await setUp({ exclusive: 4 });
    receive(s.channel, 0, 0);
    s.channel.onBuffer(barrierBuffer(1, TIMEOUTABLE), 1, 0);
    receive(s.channel, 2, 0);
    expect(s.gate.priorityEvents).toEqual([1]);
    // The announcement goes first; the barrier itself keeps its place until converted.
    const announcement = s.channel.getNextBuffer();
    expect(EventSerializer.fromBuffer(announcement?.buffer as NetworkBuffer)).toMatchObject({
      kind: "EventAnnouncement",
      sequenceNumber: 1,
    });
    announcement?.buffer.recycleBuffer();
    s.channel.convertToPriorityEvent(1);
    expect(s.gate.priorityEvents).toEqual([1, 1]);
    expect(drain(s.channel)).toEqual(["CheckpointBarrier", 0, 2]);
    expectError(
      () => s.channel.convertToPriorityEvent(1),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "no queued buffer 1",
    );
    finish(s);
  });

  it("persists the data queued before the barrier, and what arrives until the barrier", async () => {
    const s = await setUp({ exclusive: 6 });
    const writer = new RecordingChannelStateWriter();
    s.channel.setChannelStateWriter(writer);
    receive(s.channel, 0, 0);
    receive(s.channel, 1, 0);
    const barrier = new CheckpointBarrier(7n, 0n, UNALIGNED);
    // The checkpoint started at the task because of another channel's barrier.
    s.channel.checkpointStarted(barrier);
    receive(s.channel, 2, 0);
    s.channel.onBuffer(barrierBuffer(7), 3, 0);
    receive(s.channel, 4, 0);
    expect(writer.calls.map((call) => call.data.map((bytes) => bytes[0]))).toEqual([[0, 1], [2]]);
    expect(writer.calls.every((call) => call.channel === "0:0" && call.kind === "input")).toBe(
      true,
    );
    s.channel.checkpointStopped(7n);
    expect(drain(s.channel)).toEqual(["CheckpointBarrier", 0, 1, 2, 4]);
    finish(s);
  });

  it("persists only what precedes a barrier that already arrived when the checkpoint starts", async () => {
    const s = await setUp({ exclusive: 6 });
    const writer = new RecordingChannelStateWriter();
    s.channel.setChannelStateWriter(writer);
    receive(s.channel, 0, 0);
    s.channel.onBuffer(barrierBuffer(3), 1, 0);
    receive(s.channel, 2, 0);
    // The barrier overtook data 0 here; it starts the checkpoint when the task reads it.
    const taken = s.channel.getNextBuffer();
    taken?.buffer.recycleBuffer();
    s.channel.checkpointStarted(new CheckpointBarrier(3n, 0n, UNALIGNED));
    receive(s.channel, 3, 0);
    expect(writer.bytes(3n, "input").filter((_, i) => i % 10 === 0)).toEqual([0]);
    s.channel.checkpointStopped(3n);
    expect(drain(s.channel)).toEqual([0, 2, 3]);
    finish(s);
  });

  it("announces a new buffer size to the producer and counts its buffers in use", async () => {
    const s = await setUp({ exclusive: 2 });
    receive(s.channel, 0, 3);
    s.channel.announceBufferSize(512);
    expect(s.client.newBufferSizes).toEqual([512]);
    // One queued buffer plus the floating buffers the backlog asked for beyond the exclusive ones.
    expect(s.channel.getBuffersInUseCount()).toBe(1 + 3);
    drain(s.channel);
    finish(s);
    s.channel.announceBufferSize(256);
    expect(s.client.newBufferSizes).toEqual([512]);
  });
});
