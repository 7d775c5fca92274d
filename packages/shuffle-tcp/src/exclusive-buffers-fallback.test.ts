import { ErrorCodes } from "@sluice/core";
import { InProcessCluster, type RawConfig } from "@sluice/shuffle-tck/transport";
import { afterEach, describe, expect, it } from "vitest";
import { TCP_PLUGIN } from "./test-support/plugin.js";

// 256 buffers of 4 KiB per worker. 8 producers and 40 consumers: each producer's output pool
// needs 41 (one per subpartition plus one), 328 in all; each consumer gate 8 remote channels ×
// 2 exclusive + 1 floating = 17, 680 in all. Neither side fits its configured buffers.
const config: RawConfig = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.network.max": "1mb",
  "taskmanager.memory.segment-size": "4kb",
};
const PRODUCERS = 8;
const CONSUMERS = 40;
const RECORDS_PER_CONSUMER = 200;

/** Collects the process warnings of one type while a test runs. */
function recordWarnings(): { readonly messages: string[]; stop(): void } {
  const messages: string[] = [];
  const listener = (warning: Error & { code?: string }) => {
    if (warning.code === "SLUICE_BUFFERS_FALLBACK") messages.push(warning.message);
  };
  process.on("warning", listener);
  return { messages, stop: () => process.off("warning", listener) };
}

describe("a job whose buffers the network memory cannot guarantee, over TCP", () => {
  let cluster: InProcessCluster | undefined;
  let warnings: ReturnType<typeof recordWarnings> | undefined;

  afterEach(async () => {
    warnings?.stop();
    // Closing checks that every pool is full again.
    await cluster?.close();
    cluster = undefined;
  });

  async function run(extra: RawConfig) {
    cluster = new InProcessCluster(TCP_PLUGIN, { ...config, ...extra });
    const producer = await cluster.startExecutor();
    const consumer = await cluster.startExecutor();
    const { execution } = await cluster.deploy(
      {
        producers: PRODUCERS,
        consumers: CONSUMERS,
        plan: { records: RECORDS_PER_CONSUMER * CONSUMERS, padding: 100, flushEvery: 50 },
      },
      producer,
      consumer,
    );
    const result = await execution.terminated;
    /** The worker's `Status.Shuffle.Netty.BuffersFallbacks`, producer side and consumer side. */
    const fallbacks = [producer, consumer].map(
      (executor) =>
        executor.metricGroup.registry.dump().find((m) => m.name === "BuffersFallbacks")?.value,
    );
    return { result, fallbacks };
  }

  it("with the fallback on, deploys with floating-only gates and smaller output pools, naming each, its task and its buffers in a warning and counting them, and delivers everything", async () => {
    warnings = recordWarnings();
    const { result, fallbacks } = await run({
      "taskmanager.network.memory.exclusive-buffers-fallback": true,
    });
    expect(result.error).toBeUndefined();
    const consumed = (result.results.get("Consumer") ?? []) as unknown as {
      counts: number[];
      violations: string[];
    }[];
    expect(consumed).toHaveLength(CONSUMERS);
    for (const c of consumed) expect(c.violations).toEqual([]);
    for (let p = 0; p < PRODUCERS; p++) {
      expect(consumed.reduce((sum, c) => sum + (c.counts[p] ?? 0), 0)).toBe(
        RECORDS_PER_CONSUMER * CONSUMERS,
      );
    }
    const gates = warnings.messages.filter((m) => m.includes("reads with floating buffers only"));
    const pools = warnings.messages.filter((m) =>
      /output pool .* is guaranteed \d+ network buffers instead of 41/.test(m),
    );
    expect(gates.length).toBeGreaterThan(0);
    expect(gates[0]).toMatch(
      /SingleInputGate#0\[Consumer \(\d+\/40\)#0, .*\] reads with floating buffers only, guaranteed \d+ of up to \d+ floating buffers for its 8 channels: .*but only \d+ of 256 are not yet guaranteed/,
    );
    expect(pools[0]).toMatch(/output pool of .* \[Producer \(\d+\/8\)#0\] is guaranteed \d+/);
    expect(pools.length).toBeGreaterThan(0);
    // Once per gate or pool: never more warnings than there are of them.
    expect(gates.length).toBeLessThanOrEqual(CONSUMERS);
    expect(pools.length).toBeLessThanOrEqual(PRODUCERS);
    expect(fallbacks).toEqual([pools.length, gates.length]);
  }, 60_000);

  it("fails as Flink does by default", async () => {
    warnings = recordWarnings();
    const { result, fallbacks } = await run({});
    expect(result.error).toMatchObject({ code: ErrorCodes.INSUFFICIENT_BUFFERS });
    expect(warnings.messages).toEqual([]);
    expect(fallbacks).toEqual([0, 0]);
  }, 60_000);
});
