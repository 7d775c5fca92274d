import { monitorEventLoopDelay } from "node:perf_hooks";
import {
  DataType,
  ErrorCodes,
  EventSerializer,
  frameRecord,
  InputChannelID,
  ResultPartitionID,
  type SluiceError,
  TaskEvent,
} from "@sluice/core";
import { blockEventLoop } from "@sluice/core/testing";
import {
  type BufferResponse,
  type ErrorResponse,
  encodeMessage,
  errorFromErrorResponse,
  MessageId,
  type NettyMessage,
  NettyMessageDecoder,
  type NonBufferMessage,
  type PipelinedResultPartition,
  type PipelinedSubpartition,
} from "@sluice/network/plugin";
import type { Task, TaskExecutor } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import {
  gatewayOf,
  InProcessCluster,
  networkEnvironmentOf,
  type RawConfig,
} from "./in-process-cluster.js";

/**
 * A hand-driven connection to a data server, speaking the transport's framing but sending
 * whatever bytes the test chooses.
 */
export interface RawPeer {
  /**
   * Sends `bytes` (TCP: as they are; WebSocket: as one binary message). Resolves once the
   * peer's own transport took them (its send buffer drained), or the connection closed — it
   * stays pending while the server does not read.
   */
  send(bytes: Uint8Array): Promise<void>;
  /** Stops reading what the server sends, so its replies pile up on the server's side. */
  pauseReading(): void;
  resumeReading(): void;
  /** Everything received from the server so far, in order. */
  readonly received: Buffer[];
  /** Resolves once the connection closed, whichever side closed it. */
  readonly closed: Promise<void>;
  isClosed(): boolean;
  destroy(): void;
}

/** How the suite opens raw connections to a transport's data server. */
export interface RawPeerConnector {
  /** Opens a connection that completed the transport's handshake (WebSocket upgrade, TLS). */
  connect(port: number): Promise<RawPeer>;
  /**
   * Opens a connection that starts the transport's handshake and never completes it (half a
   * WebSocket upgrade request, a silent socket to a TLS server). Absent when the transport has
   * no handshake of its own (plain TCP: a silent socket is covered by the idle timeout).
   */
  connectWithoutHandshake?(port: number): Promise<RawPeer>;
}

const BUDGET = 64 * 1024;
/** What a transport may buffer beyond the budget: its high-water mark plus one write. */
const TRANSPORT_SLACK = 2 * 1024 * 1024;
/** Generous: the data server's event loop must never be blocked anywhere near this long. */
const MAX_EVENT_LOOP_DELAY_MS = 1_000;
const SHORT_TIMEOUT_MS = 300;

const base: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.network.max": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.max-frame-size": "1mb",
  "taskmanager.network.max-outbound-bytes-per-connection": `${BUDGET}b`,
  "taskmanager.network.idle-connection-timeout": `${SHORT_TIMEOUT_MS}ms`,
  "taskmanager.network.frame-read-timeout": `${SHORT_TIMEOUT_MS}ms`,
  "security.ssl.internal.handshake-timeout": `${SHORT_TIMEOUT_MS}ms`,
  "taskmanager.network.websocket.handshake-timeout": `${SHORT_TIMEOUT_MS}ms`,
};

function frames(messages: readonly NonBufferMessage[]): Buffer {
  return Buffer.concat(messages.map((m) => encodeMessage(m)));
}

function taskEventRequest(): NonBufferMessage {
  return {
    id: MessageId.TASK_EVENT_REQUEST,
    event: EventSerializer.toSerializedEvent(new TaskEvent("hostile", new Uint8Array(8))),
    partitionId: new ResultPartitionID(),
    receiverId: new InputChannelID(),
  };
}

function partitionRequest(
  partitionId: ResultPartitionID,
  receiverId = new InputChannelID(),
  credit = 2,
): NonBufferMessage {
  return {
    id: MessageId.PARTITION_REQUEST,
    partitionId,
    subpartitionIndexSet: { start: 0, end: 0 },
    receiverId,
    credit,
  };
}

/** Decodes what the server sent a raw peer (data payloads into unpooled buffers). */
function decode(peer: RawPeer): NettyMessage[] {
  const messages: NettyMessage[] = [];
  const decoder = new NettyMessageDecoder({
    side: "client",
    maxFrameSize: 1 << 20,
    onMessage: (message) => messages.push(message),
  });
  decoder.feed(Buffer.concat(peer.received));
  decoder.destroy();
  return messages;
}

/** The error of the fatal ErrorResponse (no receiver) the server sent, if any. */
function fatalError(peer: RawPeer): SluiceError | undefined {
  const fatal = decode(peer).find(
    (m): m is ErrorResponse => m.id === MessageId.ERROR_RESPONSE && m.receiverId === undefined,
  );
  return fatal === undefined ? undefined : errorFromErrorResponse(fatal);
}

/** Watches the event loop; `stop()` returns the longest delay seen, in milliseconds. */
async function watchEventLoop(): Promise<{ stop(): number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  // It records from its second tick on.
  while (histogram.count === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  return {
    stop() {
      histogram.disable();
      return histogram.max / 1e6;
    },
  };
}

/** Resolves true as soon as `condition` holds, false after `timeoutMs` (polled, no sleeps). */
async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return true;
}

/**
 * What every network-shuffle transport's data server must withstand from careless or hostile
 * peers, with its limits set low: a peer that floods requests which earn replies and never reads
 * them, peers that open connections beyond the limit, floods of waiting partition requests,
 * silent and slow sockets, unfinished handshakes and tiny NewBufferSize requests. Each case
 * checks that the server's memory stays bounded, its event loop is never blocked for long, and
 * that real consumers are still served.
 *
 * @param factory - the plugin's `shuffle-service-factory.class` value.
 * @param extraConfig added to every worker's configuration (e.g. TLS settings)
 */
export function describeHostilePeerLimitsSuite(
  name: string,
  factory: string,
  connector: RawPeerConnector,
  extraConfig: RawConfig = {},
): void {
  describe(`the ${name} data server's limits under hostile peers`, () => {
    let cluster: InProcessCluster | undefined;
    const peers: RawPeer[] = [];

    afterEach(async () => {
      for (const peer of peers.splice(0)) peer.destroy();
      await cluster?.close();
      cluster = undefined;
    });

    /** Starts a worker; its environment is what the raw peers talk to. */
    async function start(config: RawConfig = {}): Promise<TaskExecutor> {
      cluster ??= new InProcessCluster(factory, { ...base, ...extraConfig });
      return cluster.startExecutor(config);
    }

    async function connect(port: number): Promise<RawPeer> {
      const peer = await connector.connect(port);
      peers.push(peer);
      return peer;
    }

    /** A real consumer still gets all its data from `producer` (pools are checked at close). */
    async function expectStillServing(producer: TaskExecutor): Promise<void> {
      const consumer = await start({ "taskmanager.network.idle-connection-timeout": "1min" });
      const { execution } = await (cluster as InProcessCluster).deploy(
        { producers: 1, consumers: 2, plan: { records: 4_000, padding: 8 } },
        producer,
        consumer,
      );
      const result = await execution.terminated;
      expect(result.error).toBeUndefined();
      expect(result.status).toBe("FINISHED");
    }

    it("stops reading from a peer that floods requests earning replies and never reads them, holding at most twice the outbound budget", async () => {
      // Not the short idle timeout: once the peer reads again and the server has answered
      // everything, the peer sends nothing more, and the test checks afterwards that the server
      // kept the connection; a 300 ms idle timer would race that check on a busy machine.
      const executor = await start({ "taskmanager.network.idle-connection-timeout": "1min" });
      const env = networkEnvironmentOf(executor);
      const peer = await connect(executor.location.dataPort);
      peer.pauseReading();
      // Each TaskEventRequest for a partition nobody listens to earns an error response about
      // twice its size.
      const chunk = frames(Array.from({ length: 200 }, () => taskEventRequest()));
      const memoryBefore = process.memoryUsage().arrayBuffers;
      const loop = await watchEventLoop();
      const limit = 64 * 1024 * 1024;
      let sent = 0;
      let maxQueued = 0;
      const paused = () => env.getServerOutboundStats().pausedConnections > 0;
      while (sent < limit && !paused()) {
        const accepted = peer.send(chunk).then(() => true);
        // While the server does not read, the send stays pending: stop once it paused us.
        if (!(await Promise.race([accepted, until(paused, 10_000).then(() => false)]))) break;
        sent += chunk.length;
        maxQueued = Math.max(maxQueued, env.getServerOutboundStats().queuedBytes);
      }
      const stats = env.getServerOutboundStats();
      maxQueued = Math.max(maxQueued, stats.queuedBytes);
      const delay = loop.stop();
      expect(stats.pausedConnections).toBe(1);
      expect(sent).toBeLessThan(limit / 4);
      expect(maxQueued).toBeLessThanOrEqual(2 * BUDGET + TRANSPORT_SLACK);
      expect(process.memoryUsage().arrayBuffers - memoryBefore).toBeLessThan(limit / 2);
      expect(delay).toBeLessThan(MAX_EVENT_LOOP_DELAY_MS);

      // Once the peer reads again, the server drains, reads on and answers everything.
      peer.resumeReading();
      await expect
        .poll(() => env.getServerOutboundStats(), { timeout: 10_000 })
        .toEqual({
          queuedBytes: 0,
          pausedConnections: 0,
        });
      expect(peer.isClosed()).toBe(false);
      peer.destroy();
      await expectStillServing(executor);
    });

    it("holds at most one pause's input from a peer that reads its replies in short bursts while it floods requests", async () => {
      const executor = await start({ "taskmanager.network.idle-connection-timeout": "1min" });
      const env = networkEnvironmentOf(executor);
      const peer = await connect(executor.location.dataPort);
      const chunk = frames(Array.from({ length: 200 }, () => taskEventRequest()));
      let flooding = true;
      const flood = (async () => {
        while (flooding && !peer.isClosed()) await peer.send(chunk);
      })();
      // The peer reads a little now and then: the server pauses and resumes reading it again
      // and again. Each resume must consume what it held over the pause before it reads more.
      let maxHeld = 0;
      for (let cycle = 0; cycle < 40; cycle++) {
        peer.pauseReading();
        await until(() => env.getServerOutboundStats().pausedConnections > 0, 10_000);
        maxHeld = Math.max(maxHeld, env.getServerHeldInputBytes());
        peer.resumeReading();
        await until(() => env.getServerOutboundStats().pausedConnections === 0, 10_000);
        maxHeld = Math.max(maxHeld, env.getServerHeldInputBytes());
      }
      flooding = false;
      peer.resumeReading();
      peer.destroy();
      await flood.catch(() => undefined);
      // What a paused socket had read already, plus what the peer sent before the pause took
      // effect: a bounded amount, not a sum over the cycles.
      expect(maxHeld).toBeLessThanOrEqual(2 * BUDGET + TRANSPORT_SLACK + 4 * chunk.length);
      await expectStillServing(executor);
    });

    it("refuses connections beyond taskmanager.network.max-connections with a LimitExceeded error and serves the others", async () => {
      const executor = await start({
        "taskmanager.network.max-connections": 3,
        "taskmanager.network.idle-connection-timeout": "1min",
      });
      const env = networkEnvironmentOf(executor);
      const port = executor.location.dataPort;
      const admitted = [await connect(port), await connect(port), await connect(port)];
      await expect.poll(() => env.getNumberOfServerConnections()).toBe(3);
      const refused = await connect(port);
      await refused.closed;
      const error = fatalError(refused);
      expect(error?.code).toBe(ErrorCodes.LIMIT_EXCEEDED);
      expect(error?.message).toContain("taskmanager.network.max-connections");
      expect(admitted.some((p) => p.isClosed())).toBe(false);
      // A freed slot admits a real consumer again.
      for (const peer of admitted) peer.destroy();
      await expect.poll(() => env.getNumberOfServerConnections()).toBe(0);
      await expectStillServing(executor);
    });

    it("releases a flood of waiting partition requests without blocking the event loop", async () => {
      const executor = await start({
        "taskmanager.network.max-waiting-partition-requests": 1_000_000,
        "taskmanager.network.idle-connection-timeout": "1min",
      });
      const env = networkEnvironmentOf(executor);
      const missing = new ResultPartitionID();
      const flooders = await Promise.all(
        [0, 1, 2, 3].map(() => connect(executor.location.dataPort)),
      );
      const perPeer = 5_000;
      for (let i = 0; i < perPeer; i += 1_000) {
        for (const peer of flooders) {
          await peer.send(frames(Array.from({ length: 1_000 }, () => partitionRequest(missing))));
        }
      }
      const manager = env.resultPartitionManager;
      await expect
        .poll(() => manager.getNumberOfWaitingRequests(), { timeout: 20_000 })
        .toBe(4 * perPeer);
      const loop = await watchEventLoop();
      for (const peer of [...flooders].reverse()) peer.destroy();
      await expect.poll(() => manager.getNumberOfWaitingRequests()).toBe(0);
      expect(loop.stop()).toBeLessThan(MAX_EVENT_LOOP_DELAY_MS);
      await expectStillServing(executor);
    });

    it("answers partition requests beyond taskmanager.network.max-waiting-partition-requests at once with PartitionNotFound", async () => {
      const executor = await start({ "taskmanager.network.max-waiting-partition-requests": 100 });
      const env = networkEnvironmentOf(executor);
      const peer = await connect(executor.location.dataPort);
      await peer.send(
        frames(Array.from({ length: 150 }, () => partitionRequest(new ResultPartitionID()))),
      );
      await expect.poll(() => env.resultPartitionManager.getNumberOfWaitingRequests()).toBe(100);
      const refusals = () =>
        decode(peer).filter(
          (m): m is ErrorResponse =>
            m.id === MessageId.ERROR_RESPONSE && m.receiverId !== undefined,
        );
      await expect.poll(() => refusals().length).toBe(50);
      for (const refusal of refusals()) {
        const error = errorFromErrorResponse(refusal);
        expect(error.code).toBe(ErrorCodes.PARTITION_NOT_FOUND);
        expect(error.message).toContain("taskmanager.network.max-waiting-partition-requests");
      }
      expect(peer.isClosed()).toBe(false);
    });

    it("closes a connection with no partition request that sends nothing (idle timeout)", async () => {
      const executor = await start();
      const env = networkEnvironmentOf(executor);
      const peer = await connect(executor.location.dataPort);
      await peer.closed;
      const error = fatalError(peer);
      expect(error?.code).toBe(ErrorCodes.TIMEOUT);
      expect(error?.message).toContain("taskmanager.network.idle-connection-timeout");
      await expect.poll(() => env.getNumberOfServerConnections()).toBe(0);
    });

    it("closes a connection that stops in the middle of a frame (frame read timeout)", async () => {
      const executor = await start({ "taskmanager.network.idle-connection-timeout": "1min" });
      const env = networkEnvironmentOf(executor);
      const peer = await connect(executor.location.dataPort);
      const frame = frames([partitionRequest(new ResultPartitionID())]);
      await peer.send(frame.subarray(0, 20));
      await peer.closed;
      const error = fatalError(peer);
      expect(error?.code).toBe(ErrorCodes.TIMEOUT);
      expect(error?.message).toContain("taskmanager.network.frame-read-timeout");
      await expect.poll(() => env.getNumberOfServerConnections()).toBe(0);
    });

    it("keeps a connection whose frame was completed while the event loop was blocked past the frame read timeout", async () => {
      const executor = await start({ "taskmanager.network.idle-connection-timeout": "1min" });
      const env = networkEnvironmentOf(executor);
      const peer = await connect(executor.location.dataPort);
      peers.push(peer);
      const frame = frames([partitionRequest(new ResultPartitionID())]);
      await peer.send(frame.subarray(0, 20));
      // The server has read the first part: its frame read clock runs.
      await new Promise((resolve) => setTimeout(resolve, SHORT_TIMEOUT_MS / 3));
      // The rest reaches the server's socket at once, but the event loop they share is blocked
      // past the deadline: when it turns again, the timer is due before the socket is read.
      void peer.send(frame.subarray(20));
      blockEventLoop(3 * SHORT_TIMEOUT_MS);
      await expect.poll(() => env.resultPartitionManager.getNumberOfWaitingRequests()).toBe(1);
      expect(fatalError(peer)).toBeUndefined();
      expect(peer.isClosed()).toBe(false);
    });

    if (connector.connectWithoutHandshake !== undefined) {
      const connectWithoutHandshake = connector.connectWithoutHandshake.bind(connector);
      it("drops a connection that never completes the transport's handshake", async () => {
        const executor = await start();
        const peer = await connectWithoutHandshake(executor.location.dataPort);
        peers.push(peer);
        await peer.closed;
        expect(networkEnvironmentOf(executor).getNumberOfServerConnections()).toBe(0);
        await expectStillServing(executor);
      });
    }

    it("keeps sending buffers of at least the minimum segment size to a peer that asks for one-byte buffers", async () => {
      const executor = await start({ "taskmanager.memory.min-segment-size": "256b" });
      const consumerSide = await start();
      // The consumer task is never deployed: the raw peer below is the partition's only reader.
      const producers: Task[] = [];
      await (cluster as InProcessCluster).deploy(
        { producers: 1, consumers: 1, plan: { records: 0, padding: 0 } },
        gatewayOf(executor, { deployOnlyInto: producers }),
        gatewayOf(consumerSide, { neverDeploy: true }),
      );
      const writer = producers[0]?.partitions[0] as PipelinedResultPartition;
      const peer = await connect(executor.location.dataPort);
      const receiverId = new InputChannelID();
      await peer.send(
        frames([
          partitionRequest(writer.partitionId, receiverId, 1_000),
          { id: MessageId.NEW_BUFFER_SIZE, bufferSize: 1, receiverId },
        ]),
      );
      const subpartition = writer.getSubpartition(0) as PipelinedSubpartition;
      await expect.poll(() => subpartition.bufferSizeHint()).toBe(256);
      const record = new Uint8Array(20);
      // As a task emits: only while the pool has a buffer to give. A full builder of a dry pool
      // grows back towards its segment instead (so a record need not wait), which is not the
      // limit under test here.
      for (let seq = 0; seq < 200; seq++) {
        if (!writer.isAvailable()) await writer.getAvailableFuture();
        writer.emitRecord(frameRecord(record), 0);
      }
      writer.finish();
      const dataSizes = () =>
        decode(peer)
          .filter(
            (m): m is BufferResponse =>
              m.id === MessageId.BUFFER_RESPONSE && m.dataType === DataType.DATA_BUFFER,
          )
          .map((m) => m.bufferSize);
      const total = 200 * (4 + 20);
      await expect.poll(() => dataSizes().reduce((a, b) => a + b, 0)).toBe(total);
      const sizes = dataSizes();
      expect(sizes.slice(0, -1).every((size) => size === 256)).toBe(true);
      expect(sizes.length).toBe(Math.ceil(total / 256));
      peer.destroy();
    });
  });
}
