import { monitorEventLoopDelay } from "node:perf_hooks";
import {
  DataType,
  ErrorCodes,
  EventSerializer,
  InputChannelID,
  ResultPartitionID,
  type SluiceError,
  TaskEvent,
} from "@sluice/core";
import type { ShuffleEnvironmentContext } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import type { ResultPartition } from "../partition/result-partition.js";
import {
  type BufferResponse,
  type ErrorResponse,
  encodeMessage,
  errorFromErrorResponse,
  MessageId,
  type NettyMessage,
  NettyMessageDecoder,
  type NonBufferMessage,
} from "../protocol/index.js";
import {
  deployAllToAll,
  environmentContext,
  makeRecord,
  type RawConfig,
  runAllToAll,
} from "../testing/shuffle-fixture.js";

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

/** Creates the plugin's environment for a context, e.g. via its factory's createShuffleEnvironment. */
export type LimitsEnvironmentFactory = (
  context: ShuffleEnvironmentContext,
) => NetworkShuffleEnvironment;

const BUDGET = 64 * 1024;
/** What a transport may buffer beyond the budget: its high-water mark plus one write. */
const TRANSPORT_SLACK = 2 * 1024 * 1024;
/** Generous: the data server's event loop must never be blocked anywhere near this long. */
const MAX_EVENT_LOOP_DELAY_MS = 1_000;
const SHORT_TIMEOUT_MS = 300;

const base: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
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
 * @param extraConfig added to every environment's configuration (e.g. TLS settings)
 */
export function describeHostilePeerLimitsSuite(
  name: string,
  createEnvironment: LimitsEnvironmentFactory,
  connector: RawPeerConnector,
  extraConfig: RawConfig = {},
): void {
  describe(`the ${name} data server's limits under hostile peers`, () => {
    const envs: NetworkShuffleEnvironment[] = [];
    const peers: RawPeer[] = [];

    afterEach(async () => {
      for (const peer of peers.splice(0)) peer.destroy();
      for (const env of envs.splice(0)) await env.close();
    });

    async function start(config: RawConfig = {}): Promise<NetworkShuffleEnvironment> {
      const env = createEnvironment(environmentContext({ ...base, ...extraConfig, ...config }));
      envs.push(env);
      await env.start();
      return env;
    }

    async function connect(port: number): Promise<RawPeer> {
      const peer = await connector.connect(port);
      peers.push(peer);
      return peer;
    }

    /** A real consumer still gets all its data from `producer`, and every pool is full again. */
    async function expectStillServing(producer: NetworkShuffleEnvironment): Promise<void> {
      const consumer = await start({ "taskmanager.network.idle-connection-timeout": "1min" });
      const job = await deployAllToAll(producer, consumer, 1, 2, base);
      const checkers = await runAllToAll(job, 2_000, 8);
      expect(checkers.map((c) => c.nextSeq[0])).toEqual([2_000, 2_000]);
      for (const gate of job.gates) await gate.close();
      for (const writer of job.writers) writer.close();
      for (const env of [producer, consumer]) {
        const pool = env.networkBufferPool;
        await expect
          .poll(() => pool.getNumberOfAvailableMemorySegments())
          .toBe(pool.totalNumberOfMemorySegments);
      }
    }

    it("stops reading from a peer that floods requests earning replies and never reads them, holding at most twice the outbound budget", async () => {
      const env = await start();
      const peer = await connect(env.getDataPort());
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
      await expectStillServing(env);
    });

    it("refuses connections beyond taskmanager.network.max-connections with a LimitExceeded error and serves the others", async () => {
      const env = await start({
        "taskmanager.network.max-connections": 3,
        "taskmanager.network.idle-connection-timeout": "1min",
      });
      const port = env.getDataPort();
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
      await expectStillServing(env);
    });

    it("releases a flood of waiting partition requests without blocking the event loop", async () => {
      const env = await start({
        "taskmanager.network.max-waiting-partition-requests": 1_000_000,
        "taskmanager.network.idle-connection-timeout": "1min",
      });
      const missing = new ResultPartitionID();
      const flooders = await Promise.all([0, 1, 2, 3].map(() => connect(env.getDataPort())));
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
      await expectStillServing(env);
    });

    it("answers partition requests beyond taskmanager.network.max-waiting-partition-requests at once with PartitionNotFound", async () => {
      const env = await start({ "taskmanager.network.max-waiting-partition-requests": 100 });
      const peer = await connect(env.getDataPort());
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
      const env = await start();
      const peer = await connect(env.getDataPort());
      await peer.closed;
      const error = fatalError(peer);
      expect(error?.code).toBe(ErrorCodes.TIMEOUT);
      expect(error?.message).toContain("taskmanager.network.idle-connection-timeout");
      await expect.poll(() => env.getNumberOfServerConnections()).toBe(0);
    });

    it("closes a connection that stops in the middle of a frame (frame read timeout)", async () => {
      const env = await start({ "taskmanager.network.idle-connection-timeout": "1min" });
      const peer = await connect(env.getDataPort());
      const frame = frames([partitionRequest(new ResultPartitionID())]);
      await peer.send(frame.subarray(0, 20));
      await peer.closed;
      const error = fatalError(peer);
      expect(error?.code).toBe(ErrorCodes.TIMEOUT);
      expect(error?.message).toContain("taskmanager.network.frame-read-timeout");
      await expect.poll(() => env.getNumberOfServerConnections()).toBe(0);
    });

    if (connector.connectWithoutHandshake !== undefined) {
      const connectWithoutHandshake = connector.connectWithoutHandshake.bind(connector);
      it("drops a connection that never completes the transport's handshake", async () => {
        const env = await start();
        const peer = await connectWithoutHandshake(env.getDataPort());
        peers.push(peer);
        await peer.closed;
        expect(env.getNumberOfServerConnections()).toBe(0);
        await expectStillServing(env);
      });
    }

    it("keeps sending buffers of at least the minimum segment size to a peer that asks for one-byte buffers", async () => {
      const env = await start({ "taskmanager.memory.min-segment-size": "256b" });
      const consumerSide = await start();
      const job = await deployAllToAll(env, consumerSide, 1, 1, base);
      const writer = job.writers[0] as ResultPartition;
      writer.setup();
      const peer = await connect(env.getDataPort());
      const receiverId = new InputChannelID();
      const partitionId = job.descriptors[0]?.resultPartitionId as ResultPartitionID;
      await peer.send(
        frames([
          partitionRequest(partitionId, receiverId, 1_000),
          { id: MessageId.NEW_BUFFER_SIZE, bufferSize: 1, receiverId },
        ]),
      );
      const subpartition = writer.getSubpartition(0);
      await expect.poll(() => subpartition.bufferSizeHint()).toBe(256);
      for (let seq = 0; seq < 200; seq++) writer.emitRecord(makeRecord(0, 0, seq, 8), 0);
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
      writer.close();
      for (const gate of job.gates) await gate.close();
      peer.destroy();
      const pool = env.networkBufferPool;
      await expect
        .poll(() => pool.getNumberOfAvailableMemorySegments())
        .toBe(pool.totalNumberOfMemorySegments);
    });
  });
}
