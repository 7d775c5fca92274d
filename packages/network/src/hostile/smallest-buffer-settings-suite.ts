import { afterEach, describe, expect, it } from "vitest";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import { segmentsForOneChannel } from "../environment/validate-network-shuffle-configuration.js";
import {
  deployAllToAll,
  environmentContext,
  type RawConfig,
  runAllToAll,
} from "../testing/shuffle-fixture.js";
import type { LimitsEnvironmentFactory } from "./hostile-peer-limits-suite.js";

const base: RawConfig = {
  "taskmanager.memory.network.min": "4mb",
  "taskmanager.memory.segment-size": "4kb",
};

/** Every per-channel and per-gate buffer limit at its smallest value a worker accepts. */
const SMALLEST: readonly (readonly [string, RawConfig])[] = [
  ["max-buffers-per-channel = 2", { "taskmanager.network.memory.max-buffers-per-channel": 2 }],
  ["buffers-per-channel = 0", { "taskmanager.network.memory.buffers-per-channel": 0 }],
  ["floating-buffers-per-gate = 1", { "taskmanager.network.memory.floating-buffers-per-gate": 1 }],
  [
    "max-overdraft-buffers-per-gate = 0",
    { "taskmanager.network.memory.max-overdraft-buffers-per-gate": 0 },
  ],
  [
    "read-buffer.required-per-gate.max = 1",
    { "taskmanager.network.memory.read-buffer.required-per-gate.max": 1 },
  ],
  ["segment-size = 256 bytes", { "taskmanager.memory.segment-size": "256b" }],
  [
    "all of them at once",
    {
      "taskmanager.network.memory.max-buffers-per-channel": 2,
      "taskmanager.network.memory.buffers-per-channel": 0,
      "taskmanager.network.memory.floating-buffers-per-gate": 1,
      "taskmanager.network.memory.max-overdraft-buffers-per-gate": 0,
      "taskmanager.network.memory.read-buffer.required-per-gate.max": 1,
      "taskmanager.memory.segment-size": "256b",
      "taskmanager.memory.min-segment-size": "256b",
    },
  ],
];

/**
 * A valid configuration must never hang: with each buffer limit at its smallest accepted value
 * (and the network memory at the least one channel needs), records that span buffers still flow
 * between two workers over the plugin's transport, exactly once and in order, and every pool is
 * full again afterwards. Values below these are refused at start-up, naming the key (see
 * `validateNetworkShuffleConfiguration`).
 */
export function describeSmallestBufferSettingsSuite(
  name: string,
  createEnvironment: LimitsEnvironmentFactory,
): void {
  describe(`the ${name} shuffle with every buffer limit at its smallest valid value`, () => {
    const envs: NetworkShuffleEnvironment[] = [];

    afterEach(async () => {
      for (const env of envs.splice(0)) await env.close();
    });

    async function start(config: RawConfig): Promise<NetworkShuffleEnvironment> {
      const env = createEnvironment(environmentContext(config));
      envs.push(env);
      await env.start();
      return env;
    }

    async function exchange(config: RawConfig, producers: number, consumers: number) {
      const producer = await start(config);
      const consumer = await start(config);
      const job = await deployAllToAll(producer, consumer, producers, consumers, config);
      const records = 1_000;
      // 212-byte records span buffers of every size here; flushes send partly filled ones.
      const checkers = await runAllToAll(job, records, 200, { flushEvery: 7 });
      for (const checker of checkers) {
        expect(checker.nextSeq).toEqual(new Array(producers).fill(records));
        expect(checker.hasUnfinishedData()).toBe(false);
      }
      for (const gate of job.gates) await gate.close();
      for (const writer of job.writers) writer.close();
      for (const env of [producer, consumer]) {
        const pool = env.networkBufferPool;
        await expect
          .poll(() => pool.getNumberOfAvailableMemorySegments())
          .toBe(pool.totalNumberOfMemorySegments);
      }
    }

    for (const [label, settings] of SMALLEST) {
      it(`delivers everything with ${label}`, async () => {
        await exchange({ ...base, ...settings }, 2, 3);
      }, 30_000);
    }

    it("delivers everything with the least network memory that serves one channel", async () => {
      const segment = 4 * 1024;
      await exchange(
        { ...base, "taskmanager.memory.network.min": `${segmentsForOneChannel(2) * segment}b` },
        1,
        1,
      );
    }, 30_000);
  });
}
