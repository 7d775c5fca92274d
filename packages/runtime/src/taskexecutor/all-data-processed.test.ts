/**
 * The task's side of the all-records-processed handshake with a shuffle plugin that cannot take
 * part in it: with unaligned checkpoints after tasks finish the task refuses to run, naming
 * what the plugin lacks, rather than risk being recorded finished while a consumer still holds
 * its records.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, it } from "vitest";
import { CheckpointError } from "../checkpointing/checkpoint-error.js";
import type { Task } from "./task.js";
import { LocalCluster, localConfiguration } from "./test-support/local-cluster.js";
import { recordingJobMaster, wordCountDescriptors } from "./test-support/task-harness.js";

const cluster = new LocalCluster();
let checkpointsDir: string;
beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-all-data-processed-test-"));
});
afterEach(async () => {
  await cluster.close();
  await rm(checkpointsDir, { recursive: true, force: true });
});

const UNALIGNED_AFTER_TASKS_FINISH = {
  unalignedCheckpoints: { alignedCheckpointTimeoutMs: 0 },
  checkpointsAfterTasksFinish: true,
};

/** Source 0 and Count 0 of a deployed word count, not run yet. */
async function deploy(): Promise<{ source: Task; counter: Task; all: Task[] }> {
  const executor = await cluster.startExecutor(
    localConfiguration({ "state.checkpoints.dir": checkpointsDir }),
  );
  const descriptors = await wordCountDescriptors(
    cluster,
    executor,
    "EXACTLY_ONCE",
    UNALIGNED_AFTER_TASKS_FINISH,
  );
  const { jobMaster } = recordingJobMaster();
  const all = await Promise.all(descriptors.map((d) => executor.deployTask(d, jobMaster)));
  const [source, , counter] = all as [Task, Task, Task, Task];
  return { source, counter, all };
}

describe("the all-records-processed handshake with a plugin that lacks it", () => {
  it("refuses a pipelined partition without getAllDataProcessedFuture", async () => {
    const { source, all } = await deploy();
    Object.defineProperty(source.partitions[0], "getAllDataProcessedFuture", { value: undefined });
    await expectRejection(
      source.run(async () => 0),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "cannot tell when its consumers processed all its records (no getAllDataProcessedFuture)",
    );
    for (const task of all) task.cancel();
  });

  it("refuses an input gate without acknowledgeAllRecordsProcessed", async () => {
    const { counter, all } = await deploy();
    Object.defineProperty(counter.gates[0], "acknowledgeAllRecordsProcessed", { value: undefined });
    await expectRejection(
      counter.run(async () => 0),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "cannot acknowledge that all records were processed (no acknowledgeAllRecordsProcessed)",
    );
    for (const task of all) task.cancel();
  });
});
