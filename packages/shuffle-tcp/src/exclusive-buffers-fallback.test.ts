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
    return execution.terminated;
  }

  it("deploys with floating-only gates and smaller output pools, naming each in a warning, and delivers everything", async () => {
    warnings = recordWarnings();
    const result = await run({});
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
    expect(gates[0]).toMatch(/SingleInputGate.*but only \d+ of 256 are not yet guaranteed/);
    expect(pools.length).toBeGreaterThan(0);
    // Once per gate or pool: never more warnings than there are of them.
    expect(gates.length).toBeLessThanOrEqual(CONSUMERS);
    expect(pools.length).toBeLessThanOrEqual(PRODUCERS);
  }, 60_000);

  it("fails as Flink does when the fallback is turned off", async () => {
    const result = await run({ "taskmanager.network.memory.exclusive-buffers-fallback": false });
    expect(result.error).toMatchObject({ code: ErrorCodes.INSUFFICIENT_BUFFERS });
  }, 60_000);
});
