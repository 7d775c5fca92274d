import { segmentsForOneChannel } from "@sluice/network/plugin";
import { afterEach, describe, expect, it } from "vitest";
import { expectReadInFull } from "../kit-results.js";
import { InProcessCluster, type RawConfig } from "./in-process-cluster.js";
import {
  SMALLEST_BUFFER_SETTINGS_BASE as base,
  SMALLEST_BUFFER_SETTINGS,
} from "./smallest-buffer-settings.js";

/**
 * A valid configuration must never hang: with each buffer limit at its smallest accepted value
 * (and the network memory at the least one channel needs), records that span buffers still flow
 * between two workers over the plugin's transport, exactly once and in order, and every pool is
 * full again afterwards. Values below these are refused at start-up, naming the key (see
 * `validateNetworkShuffleConfiguration`).
 *
 * @param factory - the plugin's `shuffle-service-factory.class` value.
 */
export function describeSmallestBufferSettingsSuite(name: string, factory: string): void {
  describe(`the ${name} shuffle with every buffer limit at its smallest valid value`, () => {
    let cluster: InProcessCluster | undefined;

    afterEach(async () => {
      // Closing checks that every pool is full again.
      await cluster?.close();
      cluster = undefined;
    });

    async function exchange(config: RawConfig, producers: number, consumers: number) {
      cluster = new InProcessCluster(factory, config);
      const producer = await cluster.startExecutor();
      const consumer = await cluster.startExecutor();
      const records = 1_000;
      // Records of about 230 bytes span buffers of every size here; flushes send partly filled ones.
      const { execution } = await cluster.deploy(
        {
          producers,
          consumers,
          plan: { records: records * consumers, padding: 200, flushEvery: 7 },
        },
        producer,
        consumer,
      );
      const result = await execution.terminated;
      expect(result.error).toBeUndefined();
      expectReadInFull(result, producers, records * consumers);
    }

    for (const [label, settings] of SMALLEST_BUFFER_SETTINGS) {
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
