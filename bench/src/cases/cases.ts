/**
 * The benchmark cases of docs/benchmarks.md, in order (0 = the core and in-process benchmarks;
 * 7 = TLS beside plaintext; 12 = operator chaining and the typed API; 13 = task slots on
 * threads): one file each, `case-<id>-<what>.ts`.
 */
import { case0 } from "./case-0-core.js";
import { case1 } from "./case-1-keyed-throughput.js";
import { case2 } from "./case-2-flink-shape.js";
import { case3 } from "./case-3-large-records.js";
import { case4 } from "./case-4-latency.js";
import { case5 } from "./case-5-slow-consumer.js";
import { case6 } from "./case-6-buffer-timeout-sweep.js";
import { case7 } from "./case-7-tls.js";
import { case8 } from "./case-8-batch-shuffle.js";
import { case9 } from "./case-9-checkpoints.js";
import { case10 } from "./case-10-memory-constrained.js";
import { case11 } from "./case-11-all-to-all-scale.js";
import { case12 } from "./case-12-operator-chaining.js";
import { case13 } from "./case-13-task-slot-threads.js";
import type { CaseDefinition } from "./case-definition.js";

export type { CaseContext, CaseDefinition, CaseResult } from "./case-definition.js";
export { setConfigOverrides } from "./sluice-params.js";

export const CASES: readonly CaseDefinition[] = [
  case0,
  case1,
  case2,
  case3,
  case4,
  case5,
  case6,
  case7,
  case8,
  case9,
  case10,
  case11,
  case12,
  case13,
];
