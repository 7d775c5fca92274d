import { createConnection, createServer, type Server, type Socket } from "node:net";
import { ErrorCodes } from "@sluice/core";
import { errorFromErrorResponse, type NettyMessage } from "@sluice/network/plugin";
import {
  advertising,
  decodeAnswer,
  describeHostilePeerSuite,
  gatewayOf,
  InProcessCluster,
  type RawConfig,
} from "@sluice/shuffle-tck/transport";
import { afterEach, describe, expect, it } from "vitest";
import { TCP_PLUGIN } from "./test-support/plugin.js";

const config: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.network.max": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.max-frame-size": "1mb",
};

/** Sends `bytes` over a raw socket; resolves with the raw answer once the server closed it. */
function sendRaw(port: number, bytes: Uint8Array): Promise<{ answer: Buffer[]; closed: boolean }> {
  return new Promise((resolve) => {
    const answer: Buffer[] = [];
    const socket = createConnection({ host: "127.0.0.1", port }, () => socket.write(bytes));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ answer, closed: false });
    }, 5_000);
    socket.on("data", (chunk) => answer.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ answer, closed: true });
    });
  });
}

describeHostilePeerSuite("TCP", TCP_PLUGIN, {
  sendRaw,
  startGarbageServer: async (garbage) => {
    const accepted = new Set<Socket>();
    const server = createServer((socket) => {
      accepted.add(socket);
      socket.on("error", () => {});
      socket.once("close", () => accepted.delete(socket));
      socket.end(garbage);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
      port: (server.address() as { port: number }).port,
      close: async () => {
        for (const socket of accepted) socket.destroy();
        await new Promise((r) => server.close(r));
      },
    };
  },
});

describe("the TCP data server: frame limits, request limits, cut connections", () => {
  let cluster: InProcessCluster;
  const servers: Server[] = [];
  const sockets: Socket[] = [];

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    for (const server of servers.splice(0)) await new Promise((r) => server.close(r));
    await cluster.close();
  });

  /**
   * A proxy in front of `port` that forwards both ways and cuts the connection after 300 000
   * bytes from the server, which is almost surely in the middle of a frame (frames are ≤ 8 KiB
   * plus headers). Resolves with its port.
   */
  async function startCuttingProxy(port: number): Promise<number> {
    let forwarded = 0;
    const proxy = createServer((client) => {
      const upstream = createConnection({ host: "127.0.0.1", port });
      sockets.push(client, upstream);
      client.on("data", (chunk) => upstream.write(chunk));
      upstream.on("data", (chunk) => {
        const room = 300_000 - forwarded;
        if (room <= 0) return;
        const part = chunk.subarray(0, Math.min(room, chunk.length));
        forwarded += part.length;
        client.write(part);
        if (forwarded >= 300_000) {
          client.destroy();
          upstream.destroy();
        }
      });
      // The proxy's own sockets: their errors are the cut this test makes on purpose.
      client.on("error", () => {});
      upstream.on("error", () => {});
    });
    servers.push(proxy);
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    return (proxy.address() as { port: number }).port;
  }

  it("rejects a frame length above the maximum before allocating anything", async () => {
    cluster = new InProcessCluster(TCP_PLUGIN, config);
    const producer = await cluster.startExecutor();
    const frame = Buffer.alloc(9);
    frame.writeInt32BE(0x7fff_0000, 0); // ~2 GiB announced
    frame.writeUInt32BE(0xbadc0ffe, 4);
    frame.writeInt8(2, 8);
    const before = process.memoryUsage().arrayBuffers;
    const { answer, closed } = await sendRaw(producer.location.dataPort, frame);
    const messages = decodeAnswer(answer);
    expect(closed).toBe(true);
    const error = errorFromErrorResponse(
      messages.find((m) => m.id === 1) as Extract<NettyMessage, { id: 1 }>,
    );
    expect(error.code).toBe(ErrorCodes.PROTOCOL);
    expect(error.message).toMatch(/frame length/i);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
  });

  it("refuses more concurrent partition requests on one connection than the configured limit", async () => {
    cluster = new InProcessCluster(TCP_PLUGIN, config);
    const producer = await cluster.startExecutor({
      "taskmanager.network.max-partition-requests-per-connection": 2,
    });
    const consumer = await cluster.startExecutor();
    // One producer partition with 3 subpartitions, all read by consumers on one worker: 3
    // requests on the same connection.
    const { consumers } = await cluster.deploy(
      { producers: 1, consumers: 3, plan: { records: 100, padding: 8 } },
      producer,
      consumer,
    );
    const failures = [];
    for (const sink of consumers) {
      await expect.poll(() => sink.failureCause).toBeDefined();
      failures.push(sink.failureCause as Error & { code?: string });
    }
    expect(failures.some((e) => e.message.includes("max-partition-requests-per-connection"))).toBe(
      true,
    );
    for (const e of failures) expect(e.code).toBe(ErrorCodes.REMOTE_TRANSPORT);
  });

  it("fails every channel of a connection cut mid-frame, without mis-parsing the truncated frame", async () => {
    cluster = new InProcessCluster(TCP_PLUGIN, config);
    const producer = await cluster.startExecutor();
    const consumer = await cluster.startExecutor();
    const proxyPort = await startCuttingProxy(producer.location.dataPort);
    const started = Date.now();
    const { consumers } = await cluster.deploy(
      { producers: 1, consumers: 2, plan: { records: 400_000, padding: 40 } },
      advertising(producer, proxyPort),
      // The consumers must see the cut themselves, not a cancellation of the failing job.
      gatewayOf(consumer, { ignoreCancels: true }),
    );
    // Both channels fail quickly instead of hanging. A checker violation (wrong sequence,
    // corrupt bytes) would show as a consumer that finished with violations, not as a failure.
    for (const sink of consumers) {
      await expect.poll(() => sink.state, { timeout: 10_000 }).toBe("FAILED");
      expect(sink.failureCause).toMatchObject({ code: ErrorCodes.REMOTE_TRANSPORT });
      expect(sink.failureCause?.message).toContain(`127.0.0.1:${proxyPort}`);
    }
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("returns the buffer a cut frame was being copied into when the failing job cancels its consumers", async () => {
    cluster = new InProcessCluster(TCP_PLUGIN, config);
    const producer = await cluster.startExecutor();
    const consumer = await cluster.startExecutor();
    const proxyPort = await startCuttingProxy(producer.location.dataPort);
    const { execution } = await cluster.deploy(
      { producers: 1, consumers: 2, plan: { records: 400_000, padding: 40 } },
      advertising(producer, proxyPort),
      consumer,
    );
    // The consumers' channels are released by the job's cancellation while the decoder holds a
    // half-filled buffer of the cut frame; the cluster's close checks that it came back.
    expect((await execution.terminated).status).toBe("FAILED");
  });
});
