import { createConnection, createServer, type Server, type Socket } from "node:net";
import { ErrorCodes } from "@sluice/core";
import {
  errorFromErrorResponse,
  type NettyMessage,
  NettyMessageDecoder,
  type NetworkShuffleEnvironment,
} from "@sluice/network";
import {
  deployAllToAll,
  describeHostilePeerSuite,
  environmentContext,
  pollError,
  type RawConfig,
  runAllToAll,
} from "@sluice/network/testing";
import { afterEach, describe, expect, it } from "vitest";
import { TcpShuffleServiceFactory } from "./tcp-shuffle-service-factory.js";

const config: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
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

describeHostilePeerSuite(
  "TCP",
  (context) => new TcpShuffleServiceFactory().createShuffleEnvironment(context),
  {
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
  },
);

describe("the TCP data server: frame limits, request limits, cut connections", () => {
  const envs: NetworkShuffleEnvironment[] = [];
  const servers: Server[] = [];

  afterEach(async () => {
    for (const server of servers.splice(0)) await new Promise((r) => server.close(r));
    for (const env of envs.splice(0)) await env.close();
  });

  async function start(): Promise<NetworkShuffleEnvironment> {
    const env = new TcpShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    envs.push(env);
    await env.start();
    return env;
  }

  it("rejects a frame length above the maximum before allocating anything", async () => {
    const producer = await start();
    const frame = Buffer.alloc(9);
    frame.writeInt32BE(0x7fff_0000, 0); // ~2 GiB announced
    frame.writeUInt32BE(0xbadc0ffe, 4);
    frame.writeInt8(2, 8);
    const before = process.memoryUsage().arrayBuffers;
    const { answer, closed } = await sendRaw(producer.getDataPort(), frame);
    const messages: NettyMessage[] = [];
    new NettyMessageDecoder({
      side: "client",
      maxFrameSize: 1 << 20,
      onMessage: (m) => messages.push(m),
    }).feed(Buffer.concat(answer));
    expect(closed).toBe(true);
    const error = errorFromErrorResponse(
      messages.find((m) => m.id === 1) as Extract<NettyMessage, { id: 1 }>,
    );
    expect(error.code).toBe(ErrorCodes.PROTOCOL);
    expect(error.message).toMatch(/frame length/i);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
  });

  it("refuses more concurrent partition requests on one connection than the configured limit", async () => {
    const limited = { ...config, "taskmanager.network.max-partition-requests-per-connection": 2 };
    const producer = new TcpShuffleServiceFactory().createShuffleEnvironment(
      environmentContext(limited),
    );
    envs.push(producer);
    await producer.start();
    const consumer = await start();
    // One producer partition with 3 subpartitions, all read by one consumer gate: 3 requests on
    // the same connection.
    const job = await deployAllToAll(producer, consumer, 1, 3, config);
    for (const writer of job.writers) writer.setup();
    for (const gate of job.gates) {
      gate.setup();
      gate.requestPartitions();
    }
    const errors: { code?: string; message: string }[] = [];
    for (const gate of job.gates) {
      await expect.poll(() => gate.getFailureCause() ?? pollError(gate)).toBeDefined();
      errors.push(
        (gate.getFailureCause() ?? pollError(gate)) as { code?: string; message: string },
      );
      await gate.close();
    }
    expect(errors.some((e) => e.message.includes("max-partition-requests-per-connection"))).toBe(
      true,
    );
    for (const e of errors) expect(e.code).toBe(ErrorCodes.REMOTE_TRANSPORT);
    for (const writer of job.writers) writer.release();
  });

  it("fails every channel of a connection cut mid-frame, without mis-parsing the truncated frame", async () => {
    const producer = await start();
    const consumer = await start();
    // A proxy that forwards both ways and cuts the connection after 300 000 bytes from the
    // server, which is almost surely in the middle of a frame (frames are ≤ 8 KiB + headers).
    let forwarded = 0;
    const sockets: Socket[] = [];
    const proxy = createServer((client) => {
      const upstream = createConnection({ host: "127.0.0.1", port: producer.getDataPort() });
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
      client.on("error", () => {});
      upstream.on("error", () => {});
    });
    servers.push(proxy);
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const proxyPort = (proxy.address() as { port: number }).port;
    const job = await deployAllToAll(producer, consumer, 1, 2, config, undefined, {
      advertisedPort: proxyPort,
    });
    const started = Date.now();
    let failure: unknown;
    try {
      await runAllToAll(job, 200_000, 40);
    } catch (error) {
      failure = error;
    }
    // Whichever side noticed first (the producer sees its partition released once the server
    // drops the cut connection's readers), the job fails quickly instead of hanging.
    // A checker error (wrong sequence, corrupt bytes) would be a plain Error without a code.
    expect((failure as { code?: string }).code).toMatch(
      /^SLUICE_ERR_(CANCELLED|REMOTE_TRANSPORT)$/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    for (const gate of job.gates) {
      await expect.poll(() => gate.getFailureCause() ?? pollError(gate)).toBeDefined();
      const error = gate.getFailureCause() as { code?: string; message: string };
      expect(error.code).toBe(ErrorCodes.REMOTE_TRANSPORT);
      expect(error.message).toContain(`127.0.0.1:${proxyPort}`);
      await gate.close();
    }
    for (const writer of job.writers) writer.release();
    for (const socket of sockets) socket.destroy();
  });
});
