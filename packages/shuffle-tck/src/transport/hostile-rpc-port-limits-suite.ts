import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { ErrorCodes } from "@sluice/core";
import { blockEventLoop } from "@sluice/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import type { RawPeer } from "./hostile-peer-limits-suite.js";
import { connectRawTcp, rawTcpPeer } from "./raw-tcp-peer.js";

/** The limits a port under test is started with (the suite sets them low). */
export interface RpcPortLimits {
  /** Largest frame before the peer proved anything (registration, a push), in bytes. */
  readonly maxMessageSize: number;
  readonly maxConnections: number;
  /** A connection that owes a frame (its registration, its first request) sends it within this. */
  readonly idleTimeoutMs: number;
  /** A frame that started must be complete within this. */
  readonly frameReadTimeoutMs: number;
  /** Bytes of replies held for a peer that does not read them. */
  readonly maxOutboundBytes: number;
}

/** What a port holds for its peers right now. */
export interface RpcPortStats {
  readonly connections: number;
  readonly queuedOutboundBytes: number;
  readonly pausedConnections: number;
}

/** One frame sequence a peer sends first, which the port must refuse. */
export interface MalformedFrames {
  /** What is wrong with it, for the test's name. */
  readonly name: string;
  readonly bytes: Buffer;
}

/** A port of a plugin's own protocol, started in this process for one test. */
export interface RpcPortUnderTest {
  readonly port: number;
  stats(): RpcPortStats;
  /** The header of a frame the port accepts first, announcing `length` bytes after it. */
  announce(length: number): Buffer;
  /**
   * Frame sequences the port must refuse with `SLUICE_ERR_PROTOCOL`, closing only that
   * connection: JSON `null`, not JSON, an empty object, wrong field types, unexpected frames.
   */
  readonly malformed: readonly MalformedFrames[];
  /**
   * How to make the port reply to a peer that does not read: `prelude` once (maybe nothing),
   * then `frame` over and over, each earning a reply.
   */
  readonly flood: { readonly prelude?: Buffer; readonly frame: Buffer };
  /** The error the port sent a peer before it closed the connection (decoded from its bytes). */
  errorOf(received: Buffer): { readonly code: string; readonly message: string } | undefined;
  /** A legitimate client is still served end to end. */
  expectStillServing(): Promise<void>;
  close(): Promise<void>;
}

/** How the suite starts the port under test. */
export interface HostileRpcPortTarget {
  /** `limits` are the suite's; every other setting is the target's own. */
  start(limits: RpcPortLimits): Promise<RpcPortUnderTest>;
}

const BUDGET = 64 * 1024;
/** What a transport may hold beyond the budget: its high-water mark plus one write. */
const TRANSPORT_SLACK = 2 * 1024 * 1024;
/** Generous: the port's event loop must never be blocked anywhere near this long. */
const MAX_EVENT_LOOP_DELAY_MS = 1_000;
const SHORT_TIMEOUT_MS = 300;
const LONG_TIMEOUT_MS = 60_000;

const limits = (more: Partial<RpcPortLimits> = {}): RpcPortLimits => ({
  maxMessageSize: 64 * 1024,
  maxConnections: 1000,
  idleTimeoutMs: SHORT_TIMEOUT_MS,
  frameReadTimeoutMs: SHORT_TIMEOUT_MS,
  maxOutboundBytes: BUDGET,
  ...more,
});

/** Resolves true as soon as `condition` holds, false after `timeoutMs` (polled, no sleeps). */
async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return true;
}

/** Watches the event loop: `stop()` returns the longest delay seen, in milliseconds. */
async function watchEventLoop(): Promise<{ stop(): number }> {
  const { monitorEventLoopDelay } = await import("node:perf_hooks");
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  while (histogram.count === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  return {
    stop() {
      histogram.disable();
      return histogram.max / 1e6;
    },
  };
}

let gc: (() => void) | undefined;

/** Runs a full garbage collection (exposed on first use: replies and parsed frames leave garbage). */
function collectGarbage(): void {
  if (gc === undefined) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as () => void;
  }
  gc();
}

/**
 * What the process holds after a full collection: array buffers (where buffered frames and
 * replies would be) and the heap. Garbage is collected first, so only what is reachable counts.
 */
function memory(): number {
  collectGarbage();
  const { arrayBuffers, heapUsed } = process.memoryUsage();
  return arrayBuffers + heapUsed;
}

/**
 * What a port of a plugin's own protocol (the remote shuffle's shuffle manager and shuffle
 * worker ports, say) must withstand from peers that hold no credentials, as
 * {@link describeHostilePeerLimitsSuite} checks the data servers: frames announcing hundreds of
 * megabytes before the peer proved anything, silent sockets and more of them than the cap,
 * frames that stop halfway, malformed frames of every kind, and a flood of requests from a peer
 * that never reads the replies. Each case checks that the port's memory stays bounded, its event
 * loop is never blocked for long, only the offending connection is closed (with a coded error),
 * and a legitimate client is still served. The port runs in the test's own process, so an
 * exception that escaped it would fail the run.
 */
export function describeHostileRpcPortLimitsSuite(
  name: string,
  target: HostileRpcPortTarget,
): void {
  describe(`the ${name} port's limits under hostile peers`, () => {
    let port: RpcPortUnderTest | undefined;
    const peers: RawPeer[] = [];

    afterEach(async () => {
      for (const peer of peers.splice(0)) peer.destroy();
      await port?.close();
      port = undefined;
    });

    async function start(more: Partial<RpcPortLimits> = {}): Promise<RpcPortUnderTest> {
      port = await target.start(limits(more));
      return port;
    }

    async function connect(to: RpcPortUnderTest): Promise<RawPeer> {
      const peer = rawTcpPeer(await connectRawTcp(to.port));
      peers.push(peer);
      return peer;
    }

    async function closedWithin(peer: RawPeer, ms: number): Promise<boolean> {
      return Promise.race([
        peer.closed.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
      ]);
    }

    it("refuses frames announcing 512 MiB before the peer proved anything, on the length, without buffering them", async () => {
      const under = await start();
      const loop = await watchEventLoop();
      const before = memory();
      const attackers = await Promise.all(Array.from({ length: 8 }, () => connect(under)));
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      await Promise.all(
        attackers.map(async (peer) => {
          await peer.send(under.announce(512 * 1024 * 1024));
          // What follows the header would be the frame: 8 MiB of it, unless the port hung up.
          for (let i = 0; i < 8 && !peer.isClosed(); i++) await peer.send(chunk);
          expect(await closedWithin(peer, 10_000)).toBe(true);
        }),
      );
      const grown = memory() - before;
      for (const peer of attackers) {
        expect(under.errorOf(Buffer.concat(peer.received))?.code).toBe(ErrorCodes.PROTOCOL);
      }
      // Eight peers each announced 512 MiB and sent 8: the port kept none of it.
      expect(grown).toBeLessThan(32 * 1024 * 1024);
      expect(loop.stop()).toBeLessThan(MAX_EVENT_LOOP_DELAY_MS);
      await expect.poll(() => under.stats().connections).toBe(0);
      await under.expectStillServing();
    });

    it("refuses a frame one byte longer than the limit and accepts frames up to it", async () => {
      const under = await start();
      const peer = await connect(under);
      await peer.send(under.announce(64 * 1024 + 1));
      expect(await closedWithin(peer, 10_000)).toBe(true);
      const error = under.errorOf(Buffer.concat(peer.received));
      expect(error?.code).toBe(ErrorCodes.PROTOCOL);
      expect(error?.message).toContain(String(64 * 1024));
    });

    it("closes silent sockets after the idle timeout and refuses those beyond the connection cap", async () => {
      const under = await start({ maxConnections: 100 });
      const loop = await watchEventLoop();
      const before = memory();
      const silent = await Promise.all(Array.from({ length: 200 }, () => connect(under)));
      const closed = await Promise.all(silent.map((peer) => closedWithin(peer, 10_000)));
      expect(closed.every((c) => c)).toBe(true);
      const codes = silent.map((peer) => under.errorOf(Buffer.concat(peer.received))?.code);
      expect(codes.filter((code) => code === ErrorCodes.LIMIT_EXCEEDED).length).toBeGreaterThan(0);
      expect(codes.filter((code) => code === ErrorCodes.TIMEOUT).length).toBeGreaterThan(0);
      expect(codes.every((c) => c === ErrorCodes.LIMIT_EXCEEDED || c === ErrorCodes.TIMEOUT)).toBe(
        true,
      );
      await expect.poll(() => under.stats().connections).toBe(0);
      expect(memory() - before).toBeLessThan(32 * 1024 * 1024);
      expect(loop.stop()).toBeLessThan(MAX_EVENT_LOOP_DELAY_MS);
      await under.expectStillServing();
    });

    it("refuses connections beyond the cap with SLUICE_ERR_LIMIT_EXCEEDED and keeps the others", async () => {
      const under = await start({ maxConnections: 3, idleTimeoutMs: LONG_TIMEOUT_MS });
      const admitted = [await connect(under), await connect(under), await connect(under)];
      await expect.poll(() => under.stats().connections).toBe(3);
      const refused = await connect(under);
      expect(await closedWithin(refused, 10_000)).toBe(true);
      const error = under.errorOf(Buffer.concat(refused.received));
      expect(error?.code).toBe(ErrorCodes.LIMIT_EXCEEDED);
      expect(error?.message).toContain("max-connections");
      expect(admitted.some((peer) => peer.isClosed())).toBe(false);
      for (const peer of admitted) peer.destroy();
      await expect.poll(() => under.stats().connections).toBe(0);
      await under.expectStillServing();
    });

    it("closes a connection that stops in the middle of a frame (frame read timeout)", async () => {
      const under = await start({ idleTimeoutMs: LONG_TIMEOUT_MS });
      const peer = await connect(under);
      await peer.send(Buffer.concat([under.announce(100), Buffer.alloc(10)]));
      expect(await closedWithin(peer, 10_000)).toBe(true);
      const error = under.errorOf(Buffer.concat(peer.received));
      expect(error?.code).toBe(ErrorCodes.TIMEOUT);
      expect(error?.message).toContain("frame-read-timeout");
      await expect.poll(() => under.stats().connections).toBe(0);
    });

    it("keeps a connection whose frame was completed while the event loop was blocked past the frame read timeout", async () => {
      const under = await start({ idleTimeoutMs: LONG_TIMEOUT_MS });
      const peer = await connect(under);
      const { prelude, frame } = under.flood;
      await peer.send(Buffer.concat([prelude ?? Buffer.alloc(0), frame.subarray(0, 6)]));
      // The port has read the frame's first bytes: its frame read clock runs.
      await new Promise((resolve) => setTimeout(resolve, SHORT_TIMEOUT_MS / 3));
      // The rest reaches the port's socket at once, but the event loop they share is blocked past
      // the deadline: when it turns again, the timer is due before the socket is read.
      void peer.send(frame.subarray(6));
      blockEventLoop(3 * SHORT_TIMEOUT_MS);
      // The port answers, and keeps the connection open past another deadline's worth of time.
      expect(await until(() => peer.received.length > 0, 10_000)).toBe(true);
      expect(await closedWithin(peer, 2 * SHORT_TIMEOUT_MS)).toBe(false);
      expect(under.errorOf(Buffer.concat(peer.received))).toBeUndefined();
    });

    it("refuses every malformed frame with SLUICE_ERR_PROTOCOL, closing only that connection", async () => {
      const under = await start({ idleTimeoutMs: LONG_TIMEOUT_MS });
      const bystander = await connect(under);
      const loop = await watchEventLoop();
      for (const { name: what, bytes } of under.malformed) {
        const peer = await connect(under);
        await peer.send(bytes);
        expect(await closedWithin(peer, 10_000), what).toBe(true);
        const error = under.errorOf(Buffer.concat(peer.received));
        expect(error?.code, `${what}: ${error?.message}`).toBe(ErrorCodes.PROTOCOL);
      }
      expect(bystander.isClosed()).toBe(false);
      expect(loop.stop()).toBeLessThan(MAX_EVENT_LOOP_DELAY_MS);
      await under.expectStillServing();
    });

    it("stops reading from a peer that floods requests and never reads the replies, holding at most twice the outbound budget", async () => {
      const under = await start({ idleTimeoutMs: LONG_TIMEOUT_MS });
      const peer = await connect(under);
      peer.pauseReading();
      const { prelude, frame } = under.flood;
      if (prelude !== undefined) await peer.send(prelude);
      const chunk = Buffer.concat(
        Array.from({ length: Math.max(1, Math.floor((64 * 1024) / frame.length)) }, () => frame),
      );
      const before = memory();
      const loop = await watchEventLoop();
      // The kernel's socket buffers take tens of megabytes of requests and replies on loopback
      // before the port's own budget is reached: what counts is that the port stops reading.
      const limit = 512 * 1024 * 1024;
      let sent = 0;
      let maxQueued = 0;
      const paused = () => under.stats().pausedConnections > 0;
      while (sent < limit && !paused() && !peer.isClosed()) {
        const accepted = peer.send(chunk).then(() => true);
        // While the port does not read, the send stays pending: stop once it paused us.
        if (!(await Promise.race([accepted, until(paused, 10_000).then(() => false)]))) break;
        sent += chunk.length;
        maxQueued = Math.max(maxQueued, under.stats().queuedOutboundBytes);
      }
      maxQueued = Math.max(maxQueued, under.stats().queuedOutboundBytes);
      expect(peer.isClosed()).toBe(false);
      expect(under.stats().pausedConnections).toBe(1);
      expect(sent).toBeLessThan(limit);
      expect(maxQueued).toBeLessThanOrEqual(2 * BUDGET + TRANSPORT_SLACK);
      expect(memory() - before).toBeLessThan(64 * 1024 * 1024);
      expect(loop.stop()).toBeLessThan(MAX_EVENT_LOOP_DELAY_MS);

      // Once the peer reads again, the port drains, reads on and answers everything.
      peer.resumeReading();
      await expect
        .poll(() => under.stats(), { timeout: 20_000 })
        .toMatchObject({ queuedOutboundBytes: 0, pausedConnections: 0 });
      expect(peer.isClosed()).toBe(false);
      peer.destroy();
      await under.expectStillServing();
    });
  });
}
