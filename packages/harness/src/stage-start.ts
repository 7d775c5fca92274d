import type { JobExecution } from "@sluice/runtime";

/** How often {@link whenStageStarts} looks at the job's tasks: soon after the stage started. */
const STAGE_POLL_MS = 5;

/** The two stages of a batch job a kill is timed by: their job vertices' names. */
export interface BatchStages {
  /** The vertex of the first stage (it writes BLOCKING partitions). */
  readonly producers: string;
  /** The vertex of the second stage (it reads them). */
  readonly consumers: string;
}

/**
 * Calls `then` once every task of `stages.producers` finished and every task of
 * `stages.consumers` is deployed (past SCHEDULED): the second stage started, and the first
 * stage's partitions are what it needs. Polls the job side's view of its tasks, which has no
 * listener per subtask; nothing happens once the job stops running. `cancel` stops it.
 */
export function whenStageStarts(
  execution: JobExecution,
  stages: BatchStages,
  then: () => void,
): { cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const started = () => {
    const vertices = execution.executionVertices;
    const producers = vertices.filter((v) => v.vertex.name === stages.producers);
    const consumers = vertices.filter((v) => v.vertex.name === stages.consumers);
    return (
      producers.every((v) => v.state === "FINISHED") &&
      consumers.every((v) => v.state !== "CREATED" && v.state !== "SCHEDULED")
    );
  };
  const poll = () => {
    timer = undefined;
    if (execution.status !== "RUNNING") return;
    if (started()) then();
    else timer = setTimeout(poll, STAGE_POLL_MS);
  };
  poll();
  return { cancel: () => clearTimeout(timer) };
}
