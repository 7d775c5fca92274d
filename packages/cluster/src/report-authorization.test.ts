/**
 * A task manager speaks only for the tasks deployed to it: a registered peer that reports the
 * state or the checkpoints of another task manager's task is refused, and the job goes on.
 */
import { ExecutionAttemptID, JobID } from "@sluice/core";
import { must, waitFor } from "@sluice/core/testing";
import { JobGraph, type Task, type TaskInvokable } from "@sluice/runtime";
import { DeclineCheckpointCodec } from "@sluice/runtime/plugin";
import { afterEach, describe, expect, it } from "vitest";
import type { RegisteredTaskManager } from "./registered-task-manager.js";
import { sum } from "./test-support/number-tasks.js";
import {
  errorOf,
  RawControlClient,
  type RawMessage,
  terminateRawClients,
  until,
} from "./test-support/raw-control-client.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

const NUMBERS = 5_000;

afterEach(async () => {
  terminateRawClients();
  await closeTestCluster();
});

/** Released by the test once the hostile peer sent its forged reports. */
let release: () => void = () => {};

async function numbers(task: Task): Promise<number> {
  await new Promise<void>((resolve) => {
    release = resolve;
  });
  const writer = task.writer<number>();
  for (let i = 0; i < NUMBERS; i++) {
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    writer.emit(i);
  }
  return NUMBERS;
}

const invokables: Readonly<Record<string, TaskInvokable<Task>>> = { numbers, sum };

/** Numbers -> Sum on the real task manager, and an "Idle" task on the hostile peer. */
function job(): JobGraph {
  const graph = new JobGraph("numbers beside a hostile peer");
  const source = graph.addVertex({ name: "Numbers", parallelism: 1, invokable: "numbers" });
  const total = graph.addVertex({ name: "Sum", parallelism: 1, invokable: "sum" });
  graph.connect(source, total, { partitioner: { name: "FORWARD" }, serializer: "int32" });
  graph.addVertex({ name: "Idle", parallelism: 1, invokable: "idle" });
  return graph;
}

/** The next request the job manager sent the raw peer that is `method`. */
async function nextRequest(client: RawControlClient, method: string): Promise<RawMessage> {
  for (;;) {
    const message = await client.next();
    if (message.method === method) return message;
  }
}

/**
 * A job manager with a real task manager and a hostile peer that registered: the job's numbers
 * run on the real one, its "Idle" task on the peer, which accepts its deployment and nothing
 * else. Returns the running job, the peer and the attempt deployed to it.
 */
async function deployBesideHostilePeer() {
  const warnings: string[] = [];
  const jobManager = await startJobManager({}, { onWarning: (m) => warnings.push(m) });
  await startTaskManager(jobManager, {}, { invokables });
  const hostile = await RawControlClient.open(jobManager.url);
  hostile.answerHeartbeats();
  await hostile.hello();
  expect((await hostile.register(2, jobManager.plugin)).result).toBeDefined();
  const [real, peer] = (await jobManager.waitForTaskManagers(2)) as RegisteredTaskManager[];
  // The deployment resolves once every task was submitted, the hostile peer's too.
  const deployed = jobManager.deploy(job(), (vertex) =>
    vertex.name === "Idle" ? must(peer) : must(real),
  );
  const submit = await nextRequest(hostile, "submitTask");
  hostile.send({ jsonrpc: "2.0", id: submit.id, result: null });
  const execution = await deployed;
  const own = (submit.params as { descriptor: { executionAttemptId: string } }).descriptor
    .executionAttemptId;
  return { execution, hostile, own, peer: must(peer), warnings };
}

describe("reports over the control plane", () => {
  it("are refused, with a coded error and a warning, when they name another task manager's task; the job still finishes with the right counts", async () => {
    const { execution, hostile, own, warnings } = await deployBesideHostilePeer();
    const attemptOf = (name: string) =>
      must(execution.executionVertices.find((v) => v.vertex.name === name)).attemptId.toString();
    await waitFor(
      () =>
        execution.executionVertices
          .filter((v) => v.vertex.name !== "Idle")
          .every((v) => v.state === "RUNNING"),
      { what: "the real task manager's tasks to run" },
    );
    const jobId = execution.jobId.toString();

    const forgedFailure = await hostile.request(10, "updateTaskExecutionState", {
      jobId,
      executionAttemptId: attemptOf("Numbers"),
      state: "FAILED",
      error: { name: "Error", message: "forged by the hostile peer" },
    });
    const forgedFinish = await hostile.request(11, "updateTaskExecutionState", {
      jobId,
      executionAttemptId: attemptOf("Sum"),
      state: "FINISHED",
      result: { count: 1, sum: 1 },
    });
    const forgedDecline = await hostile.request(12, "declineCheckpoint", {
      decline: DeclineCheckpointCodec.toJSON({
        jobId: JobID.fromHex(jobId),
        executionAttemptId: ExecutionAttemptID.parse(attemptOf("Sum")),
        checkpointId: 1n,
        reason: "CHECKPOINT_DECLINED",
      }),
    });
    for (const reply of [forgedFailure, forgedFinish, forgedDecline]) {
      const error = errorOf(reply);
      expect(error.data?.code).toBe("SLUICE_ERR_ILLEGAL_STATE");
      expect(error.message).toContain("may report only the tasks deployed to it");
      expect(error.message).toContain("task manager 1");
    }
    expect(warnings.filter((w) => w.startsWith("refused a report"))).toHaveLength(3);
    expect(execution.status).toBe("RUNNING");

    // Its own task it may report.
    for (const [id, state] of [
      [20, "RUNNING"],
      [21, "FINISHED"],
    ] as const) {
      const reply = await hostile.request(id, "updateTaskExecutionState", {
        jobId,
        executionAttemptId: own,
        state,
        ...(state === "FINISHED" ? { result: null } : {}),
      });
      expect(reply.result, JSON.stringify(reply)).toBeNull();
    }
    // ... and, once it ended, no more about it.
    const late = await hostile.request(22, "updateTaskExecutionState", {
      jobId,
      executionAttemptId: own,
      state: "FAILED",
      error: { name: "Error", message: "too late" },
    });
    expect(errorOf(late).message).toContain("which is not deployed to it");

    release();
    const result = await execution.terminated;
    expect(result.status, String(result.error)).toBe("FINISHED");
    expect(result.results.get("Sum")).toEqual([
      { count: NUMBERS, sum: (NUMBERS * (NUMBERS - 1)) / 2 },
    ]);
  });

  it("leave out the metrics a task manager answers with for another task manager's task", async () => {
    const { execution, hostile, own, peer, warnings } = await deployBesideHostilePeer();
    const other = must(
      execution.executionVertices.find((v) => v.vertex.name === "Sum"),
    ).attemptId.toString();

    const metric = (name: string, attempt?: string) => ({
      scope: ["worker-7", "taskmanager"],
      logicalScope: "taskmanager",
      variables: attempt === undefined ? {} : { "<task_attempt_id>": attempt },
      name,
      type: "counter",
      value: 7,
    });
    const answered = peer.queryMetrics();
    const query = await nextRequest(hostile, "queryMetrics");
    hostile.send({
      jsonrpc: "2.0",
      id: query.id,
      result: {
        metrics: [metric("Status.JVM.CPU"), metric("numRecordsOut", own), metric("forged", other)],
      },
    });
    const metrics = await answered;
    expect(metrics.map((m) => m.name)).toEqual(["Status.JVM.CPU", "numRecordsOut"]);
    expect(warnings.some((w) => w.includes("name execution attempts not deployed to it"))).toBe(
      true,
    );
    for (const [id, state] of [
      [20, "RUNNING"],
      [21, "FINISHED"],
    ] as const) {
      const reply = await hostile.request(id, "updateTaskExecutionState", {
        jobId: execution.jobId.toString(),
        executionAttemptId: own,
        state,
        ...(state === "FINISHED" ? { result: null } : {}),
      });
      expect(reply.result, JSON.stringify(reply)).toBeNull();
    }
    release();
    const result = await execution.terminated;
    expect(result.status, String(result.error)).toBe("FINISHED");
    expect(result.results.get("Sum")).toEqual([
      { count: NUMBERS, sum: (NUMBERS * (NUMBERS - 1)) / 2 },
    ]);
  });
});

describe("resource ids", () => {
  it("are unique among connected task managers: a second registration is refused while the first holds the id, and welcome once it was lost", async () => {
    const jobManager = await startJobManager();
    const resourceId = "0123456789abcdef0123456789abcdef";
    const first = await RawControlClient.open(jobManager.url);
    first.answerHeartbeats();
    await first.hello();
    expect((await first.register(2, jobManager.plugin, resourceId)).result).toEqual({ index: 0 });
    const second = await RawControlClient.open(jobManager.url);
    await second.hello();
    const refused = errorOf(await second.register(2, jobManager.plugin, resourceId));
    expect(refused.data?.code).toBe("SLUICE_ERR_ILLEGAL_STATE");
    expect(refused.message).toContain(resourceId);
    expect(refused.message).toContain("which task manager 0 (pid 4242)");
    expect(jobManager.taskManagers).toHaveLength(1);
    expect(jobManager.refusedTaskManagers.map((r) => r.reason.message)).toEqual([refused.message]);

    // A task manager that lost its job manager registers again under its id: a new
    // registration, while the lost one is never used again.
    first.socket.terminate();
    await until(() => must(jobManager.taskManagers[0]).connected === false, "the loss");
    const third = await RawControlClient.open(jobManager.url);
    third.answerHeartbeats();
    await third.hello();
    expect((await third.register(2, jobManager.plugin, resourceId)).result).toEqual({ index: 1 });
    expect(jobManager.taskManagers.map((tm) => tm.connected)).toEqual([false, true]);
  });
});
