/**
 * What each system implements in a child process. A throughput run: the parent asks the producer
 * to `prepare` an endpoint (JSON), the consumer to `connect` to it, then starts the consumer's
 * `drain` and the producer's `produce`; the consumer reports what arrived when the stream ends.
 * A latency run: both sides `prepare` and `connect` (Sluice needs an exchange each way), the
 * ponger `serve`s, the pinger `ping`s.
 */

/** Settings of one throughput system (a subset applies to each). */
export interface ThroughputParams {
  /** Payload bytes of a keyed record (the int64 records of case 2 have 8). */
  readonly recordSize: number;
  readonly recordKind: "keyed" | "int64";
  /** Sluice: subpartitions of the producer's partition (= input channels of the consumer gate). */
  readonly channels: number;
  /** Sluice: how records are routed. */
  readonly selector: "keyed" | "rebalance";
  /** Sluice: `execution.buffer-timeout.interval` in ms (0 = flush after every record). */
  readonly bufferTimeoutMs: number;
  /** Sluice: the environment configuration (both processes). */
  readonly config: Record<string, unknown>;
  /**
   * Sluice: each process fetches its own metric reporters' endpoints (`/metrics`) this often, as
   * a Prometheus server would (with `metrics.reporter.prom.port` in `config`).
   */
  readonly metricsScrapeIntervalMs?: number;
  /** Raw baselines: records packed into 32 KiB writes, or one write / message per record. */
  readonly batching: "batched" | "per-record";
  /** gRPC: `grpc-node.flow_control_window`, or undefined for the default (64 KiB). */
  readonly grpcWindow?: number;
  /** Records emitted between two yields to the event loop. */
  readonly producerBatch: number;
  /** Records polled between two yields. */
  readonly consumerBatch: number;
  /** Case 5: the consumer reads at most this many bytes per second. */
  readonly consumerBytesPerSecond?: number;
  /** Case 5: false = the raw producer writes without waiting for drain (bounded by the cap). */
  readonly honourBackpressure: boolean;
  /** Case 5: safety cap on bytes queued in the producer when backpressure is ignored. */
  readonly queuedCapBytes?: number;
}

export interface ProduceResult {
  readonly sent: number;
  readonly keySum: number;
  readonly elapsedMs: number;
  readonly extra?: Record<string, unknown>;
}

export interface DrainResult {
  readonly received: number;
  readonly keySum: number;
  /** Records that arrived after the first batch (the timed ones). */
  readonly timedRecords: number;
  /** ms from the first to the last arrival. */
  readonly timedMs: number;
  readonly extra?: Record<string, unknown>;
}

export interface ThroughputProducer {
  prepare(): Promise<unknown>;
  produce(args: { durationMs: number }): Promise<ProduceResult>;
  /** After a run: release what the run used (partitions, connections). */
  cleanup(): Promise<void>;
  close(): Promise<void>;
}

export interface ThroughputConsumer {
  connect(endpoint: unknown): Promise<void>;
  drain(): Promise<DrainResult>;
  cleanup(): Promise<void>;
  close(): Promise<void>;
}

/** Settings of a latency system. */
export interface LatencyParams {
  readonly recordSize: number;
  readonly config: Record<string, unknown>;
}

export interface PingResult {
  /** RTT samples in µs, in order. */
  readonly samplesUs: readonly number[];
}

export interface LatencyPeer {
  /** Returns this side's endpoint (or null). */
  prepare(): Promise<unknown>;
  /** Connects to the other side's endpoint (or does nothing for null). */
  connect(endpoint: unknown): Promise<void>;
  /** Pinger: sends `count` pings one after the other, each after the previous pong. */
  ping?(args: { count: number }): Promise<PingResult>;
  /** Ponger: echoes until the pinger ends the exchange. */
  serve?(): Promise<{ echoed: number }>;
  close(): Promise<void>;
}

/** How case 0's reader rows decode whole records (see cases/core-bench.ts). */
export type ReaderMode = "allocating" | "reusing" | "view";
export const READER_MODES: readonly ReaderMode[] = ["allocating", "reusing", "view"];
