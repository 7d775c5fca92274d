/**
 * The REST endpoint's savepoint routes in Flink's shapes (Flink's SavepointHandlersTest and
 * StopWithSavepointHandlersTest cases, named after them), on a job manager with two task
 * managers over the control plane.
 */
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobManager } from "../job-manager.js";
import { ratedJob, ratedUserCode } from "../test-support/rated-job.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "../test-support/test-cluster.js";
import { WebMonitorEndpoint } from "./web-monitor-endpoint.js";

let base: string;
const endpoints: WebMonitorEndpoint[] = [];
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-rest-savepoints-"));
});
afterEach(async () => {
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
  await closeTestCluster();
  await rm(base, { recursive: true, force: true });
});

/** A job manager (checkpointing when `checkpoints`), two task managers, and its endpoint. */
async function startCluster(
  checkpoints = true,
): Promise<{ jobManager: JobManager; endpoint: WebMonitorEndpoint }> {
  const jobManager = await startJobManager({
    "rest.port": 0,
    "state.checkpoints.dir": path.join(base, "checkpoints"),
    ...(checkpoints ? { "execution.checkpointing.interval": "50ms" } : {}),
  });
  // A rate keeps the job running until the test stops it.
  for (let i = 0; i < 2; i++) await startTaskManager(jobManager, {}, ratedUserCode(20_000));
  await jobManager.waitForTaskManagers(2, 10_000);
  const endpoint = await WebMonitorEndpoint.start(jobManager);
  endpoints.push(endpoint);
  return { jobManager, endpoint };
}

async function call(
  endpoint: WebMonitorEndpoint,
  method: string,
  route: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(new URL(route, endpoint.url), {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Polls `GET /jobs/:jobid/savepoints/:triggerid` until COMPLETED; returns its operation. */
async function completed(
  endpoint: WebMonitorEndpoint,
  jobId: string,
  triggerId: string,
): Promise<Record<string, unknown>> {
  let answer: Record<string, unknown> = {};
  await waitFor(
    async () => {
      const polled = await call(endpoint, "GET", `/jobs/${jobId}/savepoints/${triggerId}`);
      expect(polled.status).toBe(200);
      answer = polled.body;
      return (answer.status as { id: string }).id === "COMPLETED";
    },
    { what: "the savepoint operation to complete", timeoutMs: 30_000 },
  );
  return answer.operation as Record<string, unknown>;
}

async function runningJob(jobManager: JobManager) {
  const execution = await jobManager.deploy(ratedJob("rated", 1_000_000));
  await waitFor(() => (execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0) >= 1, {
    what: "a completed checkpoint",
    timeoutMs: 20_000,
  });
  return execution;
}

describe("POST /jobs/:jobid/savepoints", () => {
  it("testSavepointCompletedSuccessfully: answers 202 with a trigger id at once, and the poll the savepoint's folder once it completed; the job goes on", async () => {
    const { jobManager, endpoint } = await startCluster();
    const execution = await runningJob(jobManager);
    const jobId = execution.jobId.toString();
    const target = path.join(base, "savepoints");
    const triggered = await call(endpoint, "POST", `/jobs/${jobId}/savepoints`, {
      "target-directory": target,
      "cancel-job": false,
    });
    expect(triggered.status).toBe(202);
    expect(triggered.body["request-id"]).toMatch(/^[0-9a-f]{32}$/);
    const operation = await completed(endpoint, jobId, triggered.body["request-id"] as string);
    const location = operation.location as string;
    expect(path.dirname(location)).toBe(target);
    expect((await stat(path.join(location, "_metadata"))).isFile()).toBe(true);
    expect(execution.status).toBe("RUNNING");
    execution.cancel();
    await execution.terminated;
  }, 60_000);

  it("testTriggerSavepointWithDefaultDirectory: without a target directory the savepoint goes to state.savepoints.dir; with cancel-job the job ends CANCELED", async () => {
    const savepoints = path.join(base, "default-savepoints");
    const jobManager = await startJobManager({
      "rest.port": 0,
      "state.checkpoints.dir": path.join(base, "checkpoints"),
      "state.savepoints.dir": savepoints,
      "execution.checkpointing.interval": "50ms",
    });
    for (let i = 0; i < 2; i++) await startTaskManager(jobManager, {}, ratedUserCode(20_000));
    await jobManager.waitForTaskManagers(2, 10_000);
    const endpoint = await WebMonitorEndpoint.start(jobManager);
    endpoints.push(endpoint);
    const execution = await runningJob(jobManager);
    const jobId = execution.jobId.toString();
    const triggered = await call(endpoint, "POST", `/jobs/${jobId}/savepoints`, {
      "cancel-job": true,
    });
    const operation = await completed(endpoint, jobId, triggered.body["request-id"] as string);
    expect(path.dirname(operation.location as string)).toBe(savepoints);
    expect((await execution.terminated).status).toBe("CANCELED");
  }, 60_000);

  it("testSavepointCompletedWithException: a savepoint that fails completes with its failure cause (class, code, stack trace)", async () => {
    const { jobManager, endpoint } = await startCluster(false);
    const execution = await jobManager.deploy(ratedJob("rated", 1_000_000));
    const jobId = execution.jobId.toString();
    const triggered = await call(endpoint, "POST", `/jobs/${jobId}/savepoints`, {
      "target-directory": path.join(base, "savepoints"),
    });
    expect(triggered.status).toBe(202);
    const operation = await completed(endpoint, jobId, triggered.body["request-id"] as string);
    expect(operation["failure-cause"]).toEqual({
      class: "IllegalStateError",
      code: "SLUICE_ERR_ILLEGAL_STATE",
      "stack-trace": expect.stringContaining("takes no checkpoints"),
    });
    execution.cancel();
    await execution.terminated;
  }, 60_000);

  it("testProvidedTriggerId and testQueryStatusOfUnknownOperationReturnsError: starts one savepoint for a trigger id sent twice (an idempotent retry), and knows no trigger id it did not hand out", async () => {
    const { jobManager, endpoint } = await startCluster();
    const execution = await runningJob(jobManager);
    const jobId = execution.jobId.toString();
    const target = path.join(base, "savepoints");
    const triggerId = "0123456789abcdef0123456789abcdef";
    for (let i = 0; i < 2; i++) {
      const triggered = await call(endpoint, "POST", `/jobs/${jobId}/savepoints`, {
        "target-directory": target,
        triggerId,
      });
      expect(triggered.body).toEqual({ "request-id": triggerId });
    }
    await completed(endpoint, jobId, triggerId);
    expect(await readdir(target)).toHaveLength(1);
    const unknown = await call(
      endpoint,
      "GET",
      `/jobs/${jobId}/savepoints/fedcba9876543210fedcba9876543210`,
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body.errors).toEqual([
      expect.stringContaining(
        "there is no savepoint operation with trigger id fedcba9876543210fedcba9876543210",
      ),
    ]);
    execution.cancel();
    await execution.terminated;
  }, 60_000);

  it("refuses a body of the wrong shape (400), an unknown job (404) and an ended one (409)", async () => {
    const { jobManager, endpoint } = await startCluster();
    const execution = await runningJob(jobManager);
    const jobId = execution.jobId.toString();
    const wrong = await call(endpoint, "POST", `/jobs/${jobId}/savepoints`, {
      "cancel-job": "yes",
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual(['cancel-job must be true or false, got "yes"']);
    const native = await call(endpoint, "POST", `/jobs/${jobId}/stop`, { formatType: "NATIVE" });
    expect(native.status).toBe(400);
    const unknown = await call(endpoint, "POST", `/jobs/${"0".repeat(32)}/savepoints`, {});
    expect(unknown.status).toBe(404);
    execution.cancel();
    await execution.terminated;
    await waitFor(
      async () => (await call(endpoint, "GET", `/jobs/${jobId}`)).body.state === "CANCELED",
      {
        what: "the endpoint to see the job canceled",
      },
    );
    const ended = await call(endpoint, "POST", `/jobs/${jobId}/savepoints`, {});
    expect(ended.status).toBe(409);
  }, 60_000);
});

describe("POST /jobs/:jobid/stop", () => {
  it("testTriggerSavepointNoDirectory: a stop without a target directory and without state.savepoints.dir completes with the failure, naming both, and the job runs on", async () => {
    const { jobManager, endpoint } = await startCluster();
    const execution = await runningJob(jobManager);
    const jobId = execution.jobId.toString();
    const triggered = await call(endpoint, "POST", `/jobs/${jobId}/stop`, { drain: true });
    const operation = await completed(endpoint, jobId, triggered.body["request-id"] as string);
    expect((operation["failure-cause"] as { "stack-trace": string })["stack-trace"]).toContain(
      "no target folder was given and state.savepoints.dir is unset",
    );
    expect(execution.status).toBe("RUNNING");
    execution.cancel();
    await execution.terminated;
  }, 60_000);

  it("testSavepointCompletedSuccessfully (stop): stops the job with a savepoint: the poll answers its folder, and the job ends FINISHED", async () => {
    const { jobManager, endpoint } = await startCluster();
    const execution = await runningJob(jobManager);
    const jobId = execution.jobId.toString();
    const target = path.join(base, "savepoints");
    const triggered = await call(endpoint, "POST", `/jobs/${jobId}/stop`, {
      targetDirectory: target,
      drain: false,
    });
    expect(triggered.status).toBe(202);
    const operation = await completed(endpoint, jobId, triggered.body["request-id"] as string);
    expect(path.dirname(operation.location as string)).toBe(target);
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    // Stopped, not run to the end.
    const sinks = (result.results.get("Sink") ?? []) as { count: number }[];
    expect(sinks.reduce((sum, s) => sum + s.count, 0)).toBeLessThan(2_000_000);
  }, 60_000);
});
