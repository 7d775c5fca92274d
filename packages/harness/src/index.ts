/**
 * `@sluice/harness` (private, not published): fault injection and the multi-process end-to-end
 * harness of this repository. Everything acts through the public handles of `@sluice/cluster`
 * and `@sluice/runtime` — a LocalCluster and its processes, a job's execution, the ShuffleMaster,
 * `sluice` processes, the REST client, leader retrieval — and never reads a process's output.
 */
export { whenHalfPreCommitted } from "./half-taken-checkpoint.js";
export {
  type JobManagerFailover,
  LeaderKills,
  type LeaderKillsEvents,
} from "./leader-kills.js";
export {
  type KilledShuffleWorker,
  remoteShuffleMasterOf,
  ShuffleWorkerKill,
  type ShuffleWorkerKillEvents,
} from "./shuffle-worker-kill.js";
export { type BatchStages, whenStageStarts } from "./stage-start.js";
export {
  StandbyCluster,
  type StandbyClusterEvents,
  type StandbyClusterOptions,
  type StandbyJobManager,
  type StandbyLeader,
} from "./standby-cluster.js";
export {
  type KilledTaskManager,
  TaskManagerKill,
  type TaskManagerKillEvents,
  type TaskManagerKillSpec,
} from "./task-manager-kill.js";
