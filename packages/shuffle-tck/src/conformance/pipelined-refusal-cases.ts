import { ErrorCodes } from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import { expect, it } from "vitest";
import { expectExitByThemselves, type TckCluster } from "./tck-cluster.js";

/**
 * For a plugin that stores BLOCKING partitions only: a job with a pipelined exchange fails at
 * once with a configuration error (`SLUICE_ERR_CONFIG`) that names the partition type, before
 * any record moves, instead of midway.
 */
export function pipelinedRefusalCases(cluster: () => TckCluster): void {
  for (const partitionType of [
    ResultPartitionType.PIPELINED_BOUNDED,
    ResultPartitionType.PIPELINED,
  ]) {
    it(`refuses a ${partitionType.name} exchange at once with SLUICE_ERR_CONFIG naming the type`, async () => {
      const { producer, consumer } = await cluster().startProducerAndConsumer();
      const { execution } = await cluster().deploy(
        { producers: 1, consumers: 1, plan: { records: 1_000, padding: 20 }, partitionType },
        producer,
        consumer,
      );
      const result = await execution.terminated;
      expect(result.status).toBe("FAILED");
      expect(result.error).toMatchObject({ code: ErrorCodes.CONFIG });
      expect(result.error?.message).toContain(partitionType.name);
      await expectExitByThemselves(producer, consumer);
    }, 60_000);
  }
}
