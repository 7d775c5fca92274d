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
} from "./conformance/describe-conformance.js";
export { WorkerProcess, workerScriptPath } from "./conformance/worker-process.js";
export { ConformanceWorkerNotFoundError } from "./errors.js";
export type { WorkerStatus } from "./messages.js";
export {
  RecordChecker,
  type TckRecord,
  TckRecordSerializer,
  TckRecordSource,
  tckKey,
} from "./records.js";
export {
  type ConsumeOptions,
  type ProducePlan,
  TCK_MAX_PARALLELISM,
  TCK_NAMES,
  TckTasks,
} from "./tck-tasks.js";
