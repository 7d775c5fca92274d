import { createConnection, createServer, type Server, type Socket } from "node:net";
import { CheckpointBarrier, EndOfPartitionEvent, frameRecord } from "@sluice/core";
import type { RemoteInputChannel, SingleInputGate } from "@sluice/network/plugin";
import { InProcessCluster } from "@sluice/shuffle-tck/transport";
import { afterEach, describe, expect, it } from "vitest";
import { TCP_PLUGIN } from "./test-support/plugin.js";

// With no exclusive buffers and one floating buffer per gate, a channel blocked by an aligned
// barrier must give its floating buffers back when the barrier arrives: the channel the
// alignment still waits for needs the gate's only buffer to deliver the data before its barrier.
const config = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.network.max": "1mb",
  "taskmanager.memory.segment-size": "4kb",
  "taskmanager.network.memory.buffers-per-channel": 0,
  "taskmanager.network.memory.floating-buffers-per-gate": 1,
  "taskmanager.network.partition-request-timeout": "2s",
};

/** How long the consumer may wait for progress; a hang without the rule ends here. */
const DEADLINE_MS = 5_000;

/**
 * A proxy in front of the producer's data server that can hold the server's frames and let
 * them through one at a time, so a test decides what the consumer has received when. Frames
 * start with their 4-byte length (which counts itself).
 */
class FrameGatingProxy {
  private readonly server: Server;
  private readonly sockets: Socket[] = [];
  private readonly held: Buffer[] = [];
  private pending: Buffer = Buffer.alloc(0);
  private client: Socket | undefined;
  private holding = true;

  constructor(upstreamPort: number) {
    this.server = createServer((client) => {
      const upstream = createConnection({ host: "127.0.0.1", port: upstreamPort });
      this.client = client;
      this.sockets.push(client, upstream);
      client.on("data", (chunk) => upstream.write(chunk));
      upstream.on("data", (chunk) => this.fromServer(chunk));
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return (this.server.address() as { port: number }).port;
  }

  /** Server frames received and not yet let through. */
  get heldFrames(): number {
    return this.held.length;
  }

  /** Lets the oldest held frame through. */
  forwardOne(): void {
    const frame = this.held.shift();
    if (frame !== undefined) this.client?.write(frame);
  }

  /** Lets everything through from now on. */
  open(): void {
    this.holding = false;
    for (const frame of this.held.splice(0)) this.client?.write(frame);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private fromServer(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 4) {
      const length = this.pending.readInt32BE(0);
      if (this.pending.length < length) return;
      const frame = Buffer.from(this.pending.subarray(0, length));
      this.pending = this.pending.subarray(length);
      if (this.holding) this.held.push(frame);
      else this.client?.write(frame);
    }
  }
}

/** A 112-byte record: what it holds does not matter here, only the buffers it takes. */
const RECORD = new Uint8Array(112);

describe("aligned barriers with buffers-per-channel = 0 over TCP", () => {
  const proxies: FrameGatingProxy[] = [];
  let cluster: InProcessCluster;

  afterEach(async () => {
    for (const proxy of proxies.splice(0)) await proxy.close();
    await cluster.close();
  });

  it("releases a blocked channel's floating buffer at the barrier, so the awaited channel gets it and the alignment completes", async () => {
    cluster = new InProcessCluster(TCP_PLUGIN, config);
    const producerExecutor = await cluster.startExecutor();
    const consumerExecutor = await cluster.startExecutor();
    const proxy = new FrameGatingProxy(producerExecutor.location.dataPort);
    proxies.push(proxy);
    const { producers, consumers } = await cluster.deployWithoutRunning(
      { producers: 2, consumers: 1, plan: { records: 0, padding: 0 } },
      producerExecutor,
      consumerExecutor,
      { advertisedPort: await proxy.listen() },
    );
    const [early, late] = producers.map((task) => task.partitions[0]);
    const gate = consumers[0]?.gates[0] as SingleInputGate;
    if (early === undefined || late === undefined) throw new Error("two producers expected");
    const barrier = new CheckpointBarrier(1n, BigInt(Date.now()));

    // The early producer queues data, its barrier and data behind the barrier: the consumer
    // asks for floating buffers for a backlog it cannot receive before it is resumed.
    early.emitRecord(frameRecord(RECORD), 0);
    early.broadcastEvent(barrier);
    early.emitRecord(frameRecord(RECORD), 0);
    early.flushAll();

    const barrierFrom = new Set<number>();
    const records = [0, 0];
    let ended = 0;
    /** Consumes what the gate has, as an aligned task would (resuming once both barriers came). */
    const consume = () => {
      for (let next = gate.pollNext(); next !== undefined; next = gate.pollNext()) {
        if (next.buffer !== undefined) {
          records[next.channelIndex] = (records[next.channelIndex] as number) + 1;
          next.buffer.recycleBuffer();
        } else if (next.event instanceof CheckpointBarrier) {
          barrierFrom.add(next.channelIndex);
          if (barrierFrom.size === 2) {
            gate.resumeConsumption(0);
            gate.resumeConsumption(1);
          }
        } else if (next.event === EndOfPartitionEvent.INSTANCE) {
          ended++;
        }
      }
    };
    /** Consumes (letting one held frame through per round when `stepping`) until `done`. */
    const until = async (done: () => boolean, what: string, stepping: boolean) => {
      const deadline = Date.now() + DEADLINE_MS;
      for (;;) {
        consume();
        if (done()) return;
        if (Date.now() > deadline) {
          const blocked = gate.getChannel(0) as RemoteInputChannel;
          throw new Error(
            `no progress towards ${what} within ${DEADLINE_MS} ms: barriers from [${[...barrierFrom]}], records [${records}], the blocked channel holds ${blocked.getNumberOfAvailableBuffers()} floating buffer(s)`,
          );
        }
        if (stepping && proxy.heldFrames > 0) proxy.forwardOne();
        await Promise.race([
          gate.getAvailableFuture(),
          new Promise((resolve) => setTimeout(resolve, 10)),
        ]);
      }
    };

    // Frame by frame: the first data buffer is consumed and recycled before the barrier is
    // received, so the channel, still wanting a buffer for the data behind the barrier, takes
    // the gate's only floating buffer back.
    await until(() => records[0] === 1, "the first data buffer", true);
    await until(() => barrierFrom.has(0), "the early barrier", true);
    proxy.open();

    // Only now the late producer sends: its data needs the gate's one floating buffer.
    late.emitRecord(frameRecord(RECORD), 0);
    late.broadcastEvent(barrier);
    late.flushAll();
    await until(() => barrierFrom.size === 2, "the late barrier (the alignment)", false);
    expect(records).toEqual([1, 1]);

    // Resumed: the data behind the early barrier arrives, then both channels end.
    early.finish();
    late.finish();
    await until(() => ended === 2, "the end of both channels", false);
    expect(records).toEqual([2, 1]);
    expect(gate.isFinished()).toBe(true);
  });
});
