/**
 * `@grpc/grpc-js` bidirectional streaming, one message per record, with an identity serializer
 * (messages are the record bytes; no protobuf). Data flows server → client; the client's
 * receive window is HTTP/2's default 64 KiB unless `grpc-node.flow_control_window` is raised.
 * The producer honours backpressure (`write()` false → 'drain').
 */

import * as grpc from "@grpc/grpc-js";
import { deferred } from "@sluice/core";
import { makeKeyedRecords } from "../records.js";
import type {
  DrainResult,
  LatencyParams,
  LatencyPeer,
  PingResult,
  ProduceResult,
  ThroughputConsumer,
  ThroughputParams,
  ThroughputProducer,
} from "../roles.js";
import { ArrivalClock } from "./arrival-clock.js";
import { RoundTrips } from "./round-trips.js";

const identity = (value: Buffer): Buffer => value;

const SERVICE: grpc.ServiceDefinition = {
  stream: {
    path: "/sluice.bench.Bench/Stream",
    requestStream: true,
    responseStream: true,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

const BenchClient = grpc.makeGenericClientConstructor(SERVICE, "Bench");

type Duplex = grpc.ServerDuplexStream<Buffer, Buffer>;

function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function startServer(
  onCall: (call: Duplex) => void,
): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(SERVICE, { stream: onCall });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return { server, port };
}

function clientOptions(window: number | undefined): grpc.ChannelOptions {
  return window === undefined ? {} : { "grpc-node.flow_control_window": window };
}

function shutdown(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 2_000);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export class GrpcThroughputProducer implements ThroughputProducer {
  private server: grpc.Server | undefined;
  private nextCall: ((call: Duplex) => void) | undefined;
  private calls: Duplex[] = [];
  private readonly records: Buffer[];

  constructor(params: ThroughputParams) {
    this.records = makeKeyedRecords(params.recordSize).map((r) => r.bytes as Buffer);
  }

  async prepare(): Promise<unknown> {
    if (this.server === undefined) {
      const { server, port } = await startServer((call) => {
        call.on("error", () => {});
        const waiter = this.nextCall;
        this.nextCall = undefined;
        if (waiter !== undefined) waiter(call);
        else this.calls.push(call);
      });
      this.server = server;
      this.port = port;
    }
    return { port: this.port };
  }

  private port = 0;

  private takeCall(): Promise<Duplex> {
    const queued = this.calls.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve) => {
      this.nextCall = resolve;
    });
  }

  async produce({ durationMs }: { durationMs: number }): Promise<ProduceResult> {
    const call = await this.takeCall();
    const records = this.records;
    const mask = records.length - 1;
    const start = performance.now();
    const end = start + durationMs;
    let sent = 0;
    let keySum = 0;
    let waits = 0;
    while (performance.now() < end && !call.destroyed) {
      for (let i = 0; i < 64; i++) {
        const ok = call.write(records[sent & mask] as Buffer);
        keySum = (keySum + (sent & mask)) | 0;
        sent++;
        if (!ok) {
          waits++;
          await new Promise<void>((resolve) => call.once("drain", resolve));
        }
      }
      await yieldNow();
    }
    call.end();
    return { sent, keySum, elapsedMs: performance.now() - start, extra: { drainWaits: waits } };
  }

  async cleanup(): Promise<void> {}

  async close(): Promise<void> {
    if (this.server !== undefined) await shutdown(this.server);
    this.server = undefined;
  }
}

export class GrpcThroughputConsumer implements ThroughputConsumer {
  private client: grpc.Client | undefined;
  private done: Promise<DrainResult> | undefined;

  constructor(private readonly params: ThroughputParams) {}

  async connect(endpoint: unknown): Promise<void> {
    const { port } = endpoint as { port: number };
    if (this.client === undefined) {
      this.client = new BenchClient(
        `127.0.0.1:${port}`,
        grpc.credentials.createInsecure(),
        clientOptions(this.params.grpcWindow),
      );
    }
    const call = (
      this.client as unknown as { stream(): grpc.ClientDuplexStream<Buffer, Buffer> }
    ).stream();
    let count = 0;
    let keySum = 0;
    let bytes = 0;
    const clock = new ArrivalClock();
    this.done = new Promise((resolve, reject) => {
      call.on("data", (data: Buffer) => {
        count++;
        bytes += data.length;
        keySum = (keySum + data.readInt32BE(0)) | 0;
        clock.arrived(count);
      });
      call.once("error", reject);
      call.once("end", () => {
        call.end();
        resolve(clock.drained(count, keySum, { bytes }));
      });
    });
    // Opens the HTTP/2 stream at once, so the server sees the call before the run starts.
    call.write(Buffer.alloc(0));
  }

  drain(): Promise<DrainResult> {
    return this.done as Promise<DrainResult>;
  }

  async cleanup(): Promise<void> {}

  async close(): Promise<void> {
    this.client?.close();
    this.client = undefined;
  }
}

/** Ping-pong over one bidi stream: the ponger (server) echoes each message. */
export class GrpcLatencyPeer implements LatencyPeer {
  private server: grpc.Server | undefined;
  private client: grpc.Client | undefined;
  private accepted: Promise<Duplex> | undefined;
  private call: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
  private readonly record: Buffer;

  constructor(
    private readonly role: "pinger" | "ponger",
    params: LatencyParams,
  ) {
    this.record = (makeKeyedRecords(params.recordSize)[7] as { bytes: Uint8Array }).bytes as Buffer;
  }

  async prepare(): Promise<unknown> {
    if (this.role === "pinger") return null;
    const accepted = deferred<Duplex>();
    this.accepted = accepted.promise;
    const { server, port } = await startServer((call) => accepted.resolve(call));
    this.server = server;
    return { port };
  }

  async connect(endpoint: unknown): Promise<void> {
    if (this.role === "ponger") return;
    const { port } = endpoint as { port: number };
    this.client = new BenchClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {});
    this.call = (
      this.client as unknown as { stream(): grpc.ClientDuplexStream<Buffer, Buffer> }
    ).stream();
    this.call.on("error", () => {});
  }

  async serve(): Promise<{ echoed: number }> {
    const call = await (this.accepted as Promise<Duplex>);
    let echoed = 0;
    return new Promise((resolve) => {
      call.on("data", (data: Buffer) => {
        call.write(data);
        echoed++;
      });
      call.on("error", () => resolve({ echoed }));
      call.once("end", () => {
        call.end();
        resolve({ echoed });
      });
    });
  }

  async ping({ count }: { count: number }): Promise<PingResult> {
    const call = this.call as grpc.ClientDuplexStream<Buffer, Buffer>;
    const trips = new RoundTrips();
    call.on("data", () => trips.replied());
    const samples = await trips.time(count, () => call.write(this.record));
    await new Promise<void>((resolve) => {
      call.once("end", () => resolve());
      call.once("error", () => resolve());
      call.end();
    });
    return { samplesUs: samples };
  }

  async close(): Promise<void> {
    this.client?.close();
    if (this.server !== undefined) await shutdown(this.server);
  }
}
