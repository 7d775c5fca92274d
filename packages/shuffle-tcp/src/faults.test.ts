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
  environmentContext,
  type RawConfig,
  runAllToAll,
} from "@sluice/network/testing";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { TcpShuffleServiceFactory } from "./tcp-shuffle-service-factory.js";

const config: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.max-frame-size": "1mb",
};

/** Sends `bytes` to the data server and collects what it answers until it closes the socket. */
function sendRaw(
  port: number,
  bytes: Uint8Array,
): Promise<{ messages: NettyMessage[]; closed: boolean }> {
  return new Promise((resolve) => {
    const messages: NettyMessage[] = [];
    const decoder = new NettyMessageDecoder({
      side: "client",
      maxFrameSize: 1 << 20,
      onMessage: (m) => messages.push(m),
    });
    const socket = createConnection({ host: "127.0.0.1", port }, () => socket.write(bytes));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ messages, closed: false });
    }, 5_000);
    socket.on("data", (chunk) => {
      try {
        decoder.feed(chunk);
      } catch {
        // not our concern here: the test inspects what decoded before
      }
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ messages, closed: true });
    });
  });
}

/** Polls a gate once to surface a pending channel error (pollNext throws it). */
function pollError(gate: { pollNext(): unknown }): unknown {
  try {
    const next = gate.pollNext() as { buffer?: { recycleBuffer(): void } } | undefined;
    next?.buffer?.recycleBuffer();
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("the TCP data server under hostile input and cut connections", () => {
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

  it("answers garbage with a fatal PROTOCOL error, closes only that connection and keeps serving others", async () => {
    const producer = await start();
    const consumer = await start();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 9, maxLength: 256 }), async (bytes) => {
        // Make sure the frame is invalid: a wrong magic number.
        bytes[4] = 0x00;
        const { messages, closed } = await sendRaw(producer.getDataPort(), bytes);
        expect(closed).toBe(true);
        const errors = messages.filter((m) => m.id === 1);
        expect(errors).toHaveLength(1);
        const error = errorFromErrorResponse(errors[0] as Extract<NettyMessage, { id: 1 }>);
        expect(error.code).toBe(ErrorCodes.PROTOCOL);
      }),
      { numRuns: 40 },
    );
    // The server is unharmed: a real consumer still gets its data.
    const job = await deployAllToAll(producer, consumer, 1, 2, config);
    const checkers = await runAllToAll(job, 2_000, 8);
    expect(checkers.map((c) => c.nextSeq[0])).toEqual([2_000, 2_000]);
  });

  it("rejects a frame length above the maximum before allocating anything", async () => {
    const producer = await start();
    const frame = Buffer.alloc(9);
    frame.writeInt32BE(0x7fff_0000, 0); // ~2 GiB announced
    frame.writeUInt32BE(0xbadc0ffe, 4);
    frame.writeInt8(2, 8);
    const before = process.memoryUsage().arrayBuffers;
    const { messages, closed } = await sendRaw(producer.getDataPort(), frame);
    expect(closed).toBe(true);
    const error = errorFromErrorResponse(
      messages.find((m) => m.id === 1) as Extract<NettyMessage, { id: 1 }>,
    );
    expect(error.code).toBe(ErrorCodes.PROTOCOL);
    expect(error.message).toMatch(/frame length/i);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
  });

  it("fails a consumer's channels with a PROTOCOL error when the 'producer' sends garbage", async () => {
    const consumer = await start();
    const producer = await start();
    const accepted: Socket[] = [];
    const fake = createServer((socket) => {
      accepted.push(socket);
      const garbage = Buffer.alloc(64, 0x5a);
      garbage.writeInt32BE(64, 0); // a plausible length, then a wrong magic number
      socket.end(garbage);
      socket.on("error", () => {});
    });
    servers.push(fake);
    await new Promise<void>((r) => fake.listen(0, "127.0.0.1", r));
    const port = (fake.address() as { port: number }).port;
    const job = await deployAllToAll(producer, consumer, 1, 2, config, undefined, {
      advertisedPort: port,
    });
    for (const writer of job.writers) writer.setup();
    for (const gate of job.gates) {
      gate.setup();
      gate.requestPartitions();
    }
    for (const gate of job.gates) {
      await expect.poll(() => gate.getFailureCause() ?? pollError(gate)).toBeDefined();
      const error = (gate.getFailureCause() ?? pollError(gate)) as {
        code?: string;
        message: string;
      };
      expect(error.code).toBe(ErrorCodes.PROTOCOL);
      expect(error.message).toMatch(/magic/i);
      await gate.close();
    }
    for (const writer of job.writers) writer.release();
    // The consumer dropped the broken connection itself.
    await expect.poll(() => consumer.getNumberOfClientConnections()).toBe(0);
    for (const socket of accepted) socket.destroy();
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
