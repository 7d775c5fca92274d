/**
 * @sluice/shuffle-tck: the conformance suite every Sluice shuffle plugin can run against itself.
 *
 * ```ts
 * import { describeShuffleServiceConformance } from "@sluice/shuffle-tck";
 * describeShuffleServiceConformance({ name: "my-plugin", factory: "my-plugin#MyFactory" });
 * ```
 */
export {
  describeShuffleServiceConformance,
  type ShuffleConformanceOptions,
} from "./conformance.js";
export type { ConsumeOptions, ConsumeResult, ProducePlan, ProduceResult } from "./messages.js";
export { encodeRecord, RECORD_HEADER_BYTES, RecordChecker } from "./records.js";
export { WorkerClient, WorkerError, workerScriptPath } from "./worker-client.js";
