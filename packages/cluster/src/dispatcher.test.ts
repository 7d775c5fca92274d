/**
 * The job manager's bookkeeping of jobs (its Dispatcher): a job is known by its id, kept in the
 * high-availability stores while it runs, taken over by the next leader from the checkpoint the
 * store names, and once it ended for good stored as a result (dirty, then its data removed, then
 * clean) that no leader runs again.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, JobID } from "@sluice/core";
import { expectRejection, waitFor } from "@sluice/core/testing";
import { EtcdHighAvailabilityServicesFactory } from "@sluice/ha-etcd";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "@sluice/ha-etcd/testing";
import {
  Configuration,
  IllegalStateError,
  type JobExecution,
  JobGraph,
  type Task,
} from "@sluice/runtime";
import { JobGraphCodec } from "@sluice/runtime/plugin";
import type { HighAvailabilityServices } from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { JobDetailsInfo } from "./rest/job-details-info.js";
import { WebMonitorEndpoint } from "./rest/web-monitor-endpoint.js";
import { TaskManager } from "./task-manager.js";
import { sum } from "./test-support/number-tasks.js";
import {
  closeTestCluster,
  LOADER,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

const root = mkdtempSync(path.join(tmpdir(), "sluice-dispatcher-"));
let run = 0;
let checkpoints = "";
const endpoints: WebMonitorEndpoint[] = [];
afterEach(async () => {
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
  await closeTestCluster();
  run++;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const NUMBERS = 20_000;

/** Numbers 0..NUMBERS-1, a millisecond's pause every 100 (a job that runs a second or two). */
async function numbers(task: Task): Promise<number> {
  let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
  task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
  const writer = task.writer<number>();
  while (offset < NUMBERS) {
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    else if (offset % 100 === 0) {
      await task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)));
    }
    writer.emit(offset);
    offset++;
  }
  return offset;
}

/** Two Numbers subtasks feeding two Sum subtasks, with the fixed id `jobId`. */
function numbersJob(jobId: string): JobGraph {
  const graph = new JobGraph("numbers", jobId);
  const source = graph.addVertex({ name: "Numbers", parallelism: 2, invokable: "numbers" });
  const total = graph.addVertex({ name: "Sum", parallelism: 2, invokable: "sum" });
  graph.connect(source, total, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "int32",
  });
  return graph;
}

/** The job graph store's record of `numbersJob(jobId)`, as a job manager writes it. */
function jobRecord(
  jobId: string,
  configuration: Readonly<Record<string, unknown>>,
  taskManagers: number,
): never {
  return {
    version: 1,
    jobGraph: JobGraphCodec.toJSON(numbersJob(jobId)),
    configuration,
    taskManagers,
  } as never;
}

/** Every number counted exactly once by the Sum subtasks. */
function expectExactlyOnce(sums: readonly unknown[] | undefined): void {
  const all = (sums ?? []) as { count: number; sum: number }[];
  expect(all.reduce((n, s) => n + s.count, 0)).toBe(2 * NUMBERS);
  expect(all.reduce((n, s) => n + s.sum, 0)).toBe(NUMBERS * (NUMBERS - 1));
}

function checkpointing(): Record<string, unknown> {
  checkpoints = path.join(root, `checkpoints-${run}`);
  return {
    "execution.checkpointing.interval": "50ms",
    "state.checkpoints.dir": checkpoints,
    "state.checkpoints.num-retained": 2,
  };
}

const INVOKABLES = { invokables: { numbers, sum } };

describe("a job manager without high availability (none)", () => {
  it("runs a job once per id: a second submission while it runs gets the same execution, and one after its end its stored result; its data is gone", async () => {
    const jobManager = await startJobManager(checkpointing());
    await startTaskManager(jobManager, {}, INVOKABLES);
    await startTaskManager(jobManager, {}, INVOKABLES);
    await jobManager.waitForTaskManagers(2);
    const jobId = new JobID().toString();
    const first = await jobManager.submitJob(numbersJob(jobId));
    const again = await jobManager.submitJob(numbersJob(jobId));
    expect(again.execution).toBe(first.execution);
    await expect(jobManager.deploy(numbersJob(jobId))).resolves.toBe(first.execution);
    const result = await first.result;
    expect(result.status).toBe("FINISHED");
    expectExactlyOnce(result.results.get("Sum"));
    // Ended for good: the result is stored clean, the job graph and checkpoints are gone.
    const ha = jobManager.highAvailability;
    expect(await ha.getJobResultStore().hasCleanJobResultEntry(jobId)).toBe(true);
    expect(await ha.getJobGraphStore().getJobIds()).toEqual([]);
    expect(await ha.createCompletedCheckpointStore(jobId, 2).getAllCheckpoints()).toEqual([]);
    expect(readdirSync(checkpoints)).toEqual([]);
    // Submitted again (an application's main run again): the stored result, nothing runs.
    const later = await jobManager.submitJob(numbersJob(jobId));
    expect(later.execution).toBeUndefined();
    const stored = await later.result;
    expect(stored.status).toBe("FINISHED");
    expect(stored.checkpoints.completed).toBe(result.checkpoints.completed);
    expect(stored.results.get("Sum")).toEqual(result.results.get("Sum"));
    expect((await jobManager.getJob(jobId))?.execution).toBeUndefined();
    await expectRejection(
      jobManager.deploy(numbersJob(jobId)),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
      "ended FINISHED before and is not run again",
    );
    expect(await jobManager.getJob(new JobID())).toBeUndefined();
  }, 60_000);

  it("keeps each job in the job graph store while it runs, with its own configuration", async () => {
    const jobManager = await startJobManager(checkpointing());
    await startTaskManager(jobManager, {}, INVOKABLES);
    await jobManager.waitForTaskManagers(1);
    const graph = numbersJob(new JobID().toString());
    const job = await jobManager.submitJob(graph, {
      configuration: new Configuration({ ...checkpointing(), "restart-strategy.type": "none" }),
    });
    const stored = (await jobManager.highAvailability
      .getJobGraphStore()
      .recoverJobGraph(graph.jobId.toString())) as { jobGraph: unknown; configuration: unknown };
    expect(JobGraphCodec.fromJSON(stored.jobGraph).jobId.equals(graph.jobId)).toBe(true);
    expect(stored.configuration).toMatchObject({ "restart-strategy.type": "none" });
    expect((await job.result).status).toBe("FINISHED");
  }, 60_000);
});

const reason = etcdUnavailableReason();
if (reason !== undefined) console.warn(`skipping the takeover tests: ${reason}`);

describe.skipIf(reason !== undefined)("job managers on a real etcd", () => {
  let etcd: EtcdServer | undefined;
  const taskManagers: TaskManager[] = [];
  const services: HighAvailabilityServices[] = [];
  beforeAll(async () => {
    etcd = await startEtcd();
  }, 30_000);
  afterEach(async () => {
    await Promise.all(taskManagers.splice(0).map((tm) => tm.close("the test ended")));
    await Promise.all(services.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    await etcd?.stop();
  });
  const ha = () => ({
    "high-availability.type": "etcd",
    "high-availability.etcd.endpoints": (etcd as EtcdServer).endpoint,
    "high-availability.storageDir": path.join(root, "ha"),
    "high-availability.cluster-id": `dispatcher-${process.pid}-${run}`,
    "high-availability.etcd.lease-ttl": "2s",
  });
  /** A task manager that finds the leader through retrieval and follows it. */
  const startFollower = async () => {
    const taskManager = await TaskManager.start(new Configuration(ha()), {
      loader: LOADER,
      connectRetryMs: 20_000,
      onWarning: () => {},
      ...INVOKABLES,
    });
    taskManagers.push(taskManager);
    return taskManager;
  };
  /** The cluster's namespace in etcd. */
  const clusterPrefix = () => `/sluice/${ha()["high-availability.cluster-id"]}/`;
  /** Puts `value` under `key` with etcd's JSON gateway, as an operator's etcdctl would. */
  const etcdPut = async (key: string, value: string) => {
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const response = await fetch(`${(etcd as EtcdServer).endpoint}/v3/kv/put`, {
      method: "POST",
      body: JSON.stringify({ key: b64(key), value: b64(value) }),
    });
    expect(response.ok).toBe(true);
  };
  /** The cluster's stores, as a reader that never leads. */
  const reader = async () => {
    const opened = await new EtcdHighAvailabilityServicesFactory().createHAServices(
      new Configuration(ha()),
      {},
    );
    services.push(opened);
    return opened;
  };
  /**
   * A leader that wrote what `write` writes into the cluster's stores, then died: it joins the
   * election, writes once it leads (the stores refuse a standby's writes), and closes.
   */
  const leaveBehind = async (write: (stores: HighAvailabilityServices) => Promise<void>) => {
    const dead = await reader();
    await dead.getJobManagerLeaderElection().startLeaderElection({
      grantLeadership: () => {},
      revokeLeadership: () => {},
      handleError: () => {},
    });
    await waitFor(
      async () => {
        try {
          await write(dead);
          return true;
        } catch {
          return false;
        }
      },
      { what: "the leadership of the dead leader" },
    );
    await dead.close();
  };

  it("a planned stop of the leader suspends its job and keeps the checkpoint etcd names: the next leader resumes from exactly that one", async () => {
    const keys = { ...ha(), ...checkpointing() };
    const recovered: JobExecution[] = [];
    const first = await startJobManager(keys, { onWarning: () => {} });
    await first.waitForLeadership(15_000);
    const second = await startJobManager(keys, {
      onWarning: () => {},
      onJobRecovered: (execution) => recovered.push(execution),
    });
    await startFollower();
    await startFollower();
    await first.waitForTaskManagers(2);
    const jobId = new JobID().toString();
    const job = await first.submitJob(numbersJob(jobId));
    const store = (await reader()).createCompletedCheckpointStore(jobId, 2);
    await waitFor(async () => (await store.getAllCheckpoints()).length === 2, {
      what: "two stored checkpoints",
      timeoutMs: 20_000,
    });
    await first.close({ timeoutMs: 1_000 });
    expect((await job.result).status).toBe("SUSPENDED");
    // What etcd names after the stop is on disk: nothing was deleted.
    const named = await store.getLatestCheckpoint();
    const stored = await store.getAllCheckpoints();
    expect(stored).toHaveLength(2);
    const folders = readdirSync(path.join(checkpoints, jobId));
    for (const checkpoint of stored) expect(folders).toContain(`chk-${checkpoint.checkpointId}`);
    await second.waitForLeadership(15_000);
    await waitFor(() => recovered.length === 1, { what: "the takeover", timeoutMs: 30_000 });
    const [execution] = recovered;
    expect(execution?.latestRestore?.checkpoint.checkpointId).toBe(named?.checkpointId);
    // The application's main on the new leader finds the job it took over.
    const client = await second.submitJob(numbersJob(jobId));
    expect(client.execution).toBe(execution);
    const result = await client.result;
    expect(result.status).toBe("FINISHED");
    expectExactlyOnce(result.results.get("Sum"));
    // Its checkpoint ids continued above the old leader's: no folder was used twice.
    expect(result.checkpoints.completed).toBeGreaterThan(0);
    expect(result.checkpoints.restoredFrom).toBe(named?.checkpointId);
    expect(await (await reader()).getJobResultStore().hasCleanJobResultEntry(jobId)).toBe(true);
  }, 90_000);

  it("a leader elected with a dirty result in the store finishes its cleanup and never runs the job", async () => {
    const keys = { ...ha(), ...checkpointing() };
    const jobId = new JobID().toString();
    const graph = numbersJob(jobId);
    // A leader that stored the job, a checkpoint and its dirty result, then died.
    const chk = path.join(checkpoints, jobId, "chk-7");
    await mkdir(chk, { recursive: true });
    await writeFile(path.join(chk, "_metadata"), "whatever");
    await leaveBehind(async (dead) => {
      await dead.getJobGraphStore().putJobGraph(jobId, jobRecord(jobId, keys, 2));
      await dead.createCompletedCheckpointStore(jobId, 2).addCheckpoint({
        checkpointId: 7n,
        timestamp: Date.now(),
        externalPointer: path.join(chk, "_metadata"),
      });
      await dead.getJobResultStore().createDirtyResult({
        jobId,
        status: "FINISHED",
        timestamp: Date.now(),
      });
    });
    const recovered: JobExecution[] = [];
    const leader = await startJobManager(keys, {
      onWarning: () => {},
      onJobRecovered: (execution) => recovered.push(execution),
    });
    await leader.waitForLeadership(15_000);
    const check = await reader();
    await waitFor(async () => check.getJobResultStore().hasCleanJobResultEntry(jobId), {
      what: "the cleanup",
    });
    expect(await check.getJobGraphStore().getJobIds()).toEqual([]);
    expect(await check.createCompletedCheckpointStore(jobId, 2).getAllCheckpoints()).toEqual([]);
    expect(readdirSync(checkpoints)).toEqual([]);
    const client = await leader.submitJob(graph);
    expect(client.execution).toBeUndefined();
    expect((await client.result).status).toBe("FINISHED");
    expect(recovered).toEqual([]);
  }, 60_000);

  it("refuses a job graph pointer outside the storage folder: the job is neither run nor cleaned up from it, the file outside is neither read nor deleted, and the other jobs are taken over", async () => {
    const keys = { ...ha(), ...checkpointing() };
    const [refused, ended, taken] = [new JobID(), new JobID(), new JobID()].map(String) as [
      string,
      string,
      string,
    ];
    // A leader stored three jobs, one of which ended (its result dirty), then died.
    const record = (jobId: string) => jobRecord(jobId, keys, 1);
    await leaveBehind(async (dead) => {
      for (const jobId of [refused, ended, taken]) {
        await dead.getJobGraphStore().putJobGraph(jobId, record(jobId));
      }
      await dead.getJobResultStore().createDirtyResult({
        jobId: ended,
        status: "FINISHED",
        timestamp: Date.now(),
      });
    });
    // Then the keys of two of them were aimed at files outside the storage folder.
    const outside = path.join(root, `outside-${run}`);
    await mkdir(outside, { recursive: true });
    const files = [refused, ended].map((jobId) => path.join(outside, `${jobId}.json`));
    for (const [i, jobId] of [refused, ended].entries()) {
      const file = files[i] as string;
      await writeFile(file, JSON.stringify({ jobId, jobGraph: record(jobId) }));
      await etcdPut(`${clusterPrefix()}jobgraphs/${jobId}`, file);
    }
    const warnings: string[] = [];
    const recovered: JobExecution[] = [];
    const leader = await startJobManager(keys, {
      onWarning: (message) => warnings.push(message),
      onJobRecovered: (execution) => recovered.push(execution),
    });
    await startFollower();
    await leader.waitForLeadership(15_000);
    await waitFor(() => recovered.length === 1, { what: "the takeover", timeoutMs: 30_000 });
    expect(String(recovered[0]?.jobId)).toBe(taken);
    await waitFor(
      () =>
        warnings.some((w) => w.includes(`job ${refused} cannot be taken over`)) &&
        warnings.some((w) => w.includes(`the cleanup of job ${ended} is not finished`)),
      { what: "both refusals" },
    );
    for (const warning of warnings.filter((w) => w.includes("outside"))) {
      expect(warning).toMatch(/SLUICE_ERR_HA_STATE|is outside/);
    }
    // Nothing outside was deleted; the ended job's result stays dirty, the refused job stays.
    for (const file of files) expect(readdirSync(outside)).toContain(path.basename(file));
    const check = await reader();
    expect(await check.getJobResultStore().hasDirtyJobResultEntry(ended)).toBe(true);
    expect(await check.getJobGraphStore().getJobIds()).toContain(refused);
    expect(await leader.getJob(refused)).toBeUndefined();
    recovered[0]?.cancel("the test ended");
  }, 60_000);

  /**
   * A leader elected after one that stored `numbersJob(jobId)` (run on `taskManagers` task
   * managers) and died, with its REST endpoint; it has no task manager yet.
   */
  const leaderTakingOver = async (jobId: string, taskManagers: number) => {
    const keys = { ...ha(), ...checkpointing() };
    await leaveBehind((dead) =>
      dead.getJobGraphStore().putJobGraph(jobId, jobRecord(jobId, keys, taskManagers)),
    );
    const warnings: string[] = [];
    const waits: string[] = [];
    const leader = await startJobManager(
      { ...keys, "rest.port": 0 },
      {
        onWarning: (message) => warnings.push(message),
        onTaskManagerWait: (wait, phase) => waits.push(`${phase}: ${wait.what}`),
      },
    );
    const endpoint = await WebMonitorEndpoint.start(leader, { onWarning: () => {} });
    endpoints.push(endpoint);
    await leader.waitForLeadership(15_000);
    /** `GET /jobs/:jobid` of the job: its status code and body. */
    const job = async () => {
      const response = await fetch(new URL(`jobs/${jobId}`, endpoint.url));
      return { status: response.status, body: (await response.json()) as JobDetailsInfo };
    };
    return { leader, endpoint, warnings, waits, job };
  };

  it("cancels a job it takes over before deploying it: INITIALIZING, then CANCELED, stored for good, and its wait for task managers ends", async () => {
    const jobId = new JobID().toString();
    const { leader, endpoint, job, waits } = await leaderTakingOver(jobId, 2);
    await waitFor(async () => (await job()).body.state === "INITIALIZING", {
      what: "the job shown INITIALIZING",
      timeoutMs: 15_000,
    });
    expect(leader.initializingJobs.map((initializing) => String(initializing.jobId))).toEqual([
      jobId,
    ]);
    expect(leader.taskManagerWaits.map((wait) => wait.what)).toEqual([
      "2 task managers to run the jobs taken over",
    ]);
    const cancel = await fetch(new URL(`jobs/${jobId}?mode=cancel`, endpoint.url), {
      method: "PATCH",
      headers: { "content-type": "application/json" },
    });
    expect(cancel.status).toBe(202);
    await waitFor(async () => (await job()).body.state === "CANCELED", {
      what: "the job CANCELED",
      timeoutMs: 15_000,
    });
    const { body } = await job();
    expect(body["root-cause"]).toBe(`job numbers was canceled through the REST endpoint`);
    expect(body.timestamps.INITIALIZING).toBe(body["start-time"]);
    expect(body.timestamps.CANCELED).toBeGreaterThanOrEqual(body["start-time"]);
    // Never deployed: no subtask ran, nothing waits for task managers any more.
    expect(body.vertices.map((vertex) => [vertex.name, vertex.status])).toEqual([
      ["Numbers", "CREATED"],
      ["Sum", "CREATED"],
    ]);
    expect(leader.taskManagerWaits).toEqual([]);
    expect(waits).toEqual([
      "began: 2 task managers to run the jobs taken over",
      "abandoned: 2 task managers to run the jobs taken over",
    ]);
    expect(leader.initializingJobs).toEqual([]);
    // Ended for good, as any canceled job: its result is stored and the job graph is gone.
    const check = await reader();
    expect(await check.getJobResultStore().hasCleanJobResultEntry(jobId)).toBe(true);
    expect(await check.getJobGraphStore().getJobIds()).toEqual([]);
    expect((await (await leader.getJob(jobId))?.result)?.status).toBe("CANCELED");
  }, 60_000);

  it("shows a job whose takeover fails as FAILED with the cause, and leaves it in the stores for the next leader", async () => {
    const jobId = new JobID().toString();
    const { leader, job, warnings } = await leaderTakingOver(jobId, 1);
    // The only task manager lacks the job's source: the job cannot be deployed on it.
    const taskManager = await TaskManager.start(new Configuration(ha()), {
      loader: LOADER,
      connectRetryMs: 20_000,
      onWarning: () => {},
      invokables: { sum },
    });
    taskManagers.push(taskManager);
    await waitFor(async () => (await job()).body.state === "FAILED", {
      what: "the job FAILED",
      timeoutMs: 30_000,
    });
    const { body } = await job();
    expect(body["root-cause"]).toContain(`job numbers (${jobId}) cannot run with`);
    expect(body["root-cause"]).toContain('lacks invokable "numbers"');
    expect(warnings.join("\n")).toContain(`job ${jobId} could not be taken over:`);
    // Not ended for good: no result, the job stays for the next leader to take over.
    const check = await reader();
    expect(await check.getJobResultStore().getJobResult(jobId)).toBeUndefined();
    expect(await check.getJobGraphStore().getJobIds()).toEqual([jobId]);
    expect(await leader.getJob(jobId)).toBeUndefined();
  }, 60_000);
});
