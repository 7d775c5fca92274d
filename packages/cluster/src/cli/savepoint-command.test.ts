/**
 * `sluice savepoint` and `sluice stop` against a running job manager's REST endpoint (Flink's
 * CliFrontendSavepointTest and CliFrontendStopWithSavepointTest cases, named after them).
 */
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import type { JobExecution } from "@sluice/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebMonitorEndpoint } from "../rest/web-monitor-endpoint.js";
import { ratedJob, ratedUserCode } from "../test-support/rated-job.js";
import { sluiceInProcess as sluice } from "../test-support/sluice-in-process.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "../test-support/test-cluster.js";

let base: string;
let endpoint: WebMonitorEndpoint | undefined;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-cli-savepoint-"));
});
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
  await closeTestCluster();
  await rm(base, { recursive: true, force: true });
});

/** A checkpointing job on two task managers, and `--jobmanager` for its REST endpoint. */
async function runningJob(
  extra: Record<string, unknown> = {},
): Promise<{ execution: JobExecution; rest: string }> {
  const jobManager = await startJobManager({
    "rest.port": 0,
    "state.checkpoints.dir": path.join(base, "checkpoints"),
    "execution.checkpointing.interval": "50ms",
    ...extra,
  });
  for (let i = 0; i < 2; i++) await startTaskManager(jobManager, {}, ratedUserCode(20_000));
  await jobManager.waitForTaskManagers(2, 10_000);
  endpoint = await WebMonitorEndpoint.start(jobManager);
  const execution = await jobManager.deploy(ratedJob("rated", 1_000_000));
  await waitFor(() => (execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0) >= 1, {
    what: "a completed checkpoint",
    timeoutMs: 20_000,
  });
  return { execution, rest: new URL(endpoint.url).host };
}

/** The folder a command printed (`savepoint completed: <folder>`). */
function printedFolder(stdout: string): string {
  const match = /savepoint completed: (.+)\n/.exec(stdout);
  if (match?.[1] === undefined) throw new Error(`no savepoint folder in ${JSON.stringify(stdout)}`);
  return match[1];
}

describe("sluice savepoint and sluice stop", () => {
  it.each(["savepoint", "stop"])(
    "prints the options of %s with --help and exits 0",
    async (command) => {
      const { code, stdout } = await sluice(command, "--help");
      expect(code).toBe(0);
      expect(stdout).toContain(`Usage: sluice ${command}`);
      expect(stdout).toContain("--jobmanager");
    },
  );
});

describe("sluice savepoint", () => {
  it("testTriggerSavepointCustomTarget: triggers a savepoint into the folder given, prints it, and the job goes on", async () => {
    const { execution, rest } = await runningJob();
    const target = path.join(base, "savepoints");
    const { code, stdout, stderr } = await sluice(
      "savepoint",
      execution.jobId.toString(),
      target,
      "--jobmanager",
      rest,
    );
    expect(code, stderr).toBe(0);
    const folder = printedFolder(stdout);
    expect(path.dirname(folder)).toBe(target);
    expect((await stat(path.join(folder, "_metadata"))).isFile()).toBe(true);
    expect(execution.status).toBe("RUNNING");
    execution.cancel();
    await execution.terminated;
  }, 60_000);

  it("testTriggerSavepointFailure: exits 1 with the job manager's reason when the savepoint cannot be taken", async () => {
    const { execution, rest } = await runningJob();
    const { code, stderr } = await sluice(
      "savepoint",
      execution.jobId.toString(),
      "--jobmanager",
      rest,
    );
    expect(code).toBe(1);
    expect(stderr).toContain("no target folder was given and state.savepoints.dir is unset");
    execution.cancel();
    await execution.terminated;
  }, 60_000);

  it("testTriggerSavepointFailureIllegalJobID: exits 2 for something that is no job id", async () => {
    const { code, stderr } = await sluice("savepoint", "not-a-job");
    expect(code).toBe(2);
    expect(stderr).toContain('a job id is 32 hex digits, got "not-a-job"');
  });
});

describe("sluice stop", () => {
  it("testStopWithExplicitSavepointDir: stops the job with a savepoint into --savepointPath; the job ends FINISHED", async () => {
    const { execution, rest } = await runningJob();
    const target = path.join(base, "savepoints");
    const { code, stdout, stderr } = await sluice(
      "stop",
      "--savepointPath",
      target,
      execution.jobId.toString(),
      "--jobmanager",
      rest,
    );
    expect(code, stderr).toBe(0);
    expect(path.dirname(printedFolder(stdout))).toBe(target);
    expect((await execution.terminated).status).toBe("FINISHED");
  }, 60_000);

  it("testStopWithMaxWMAndDefaultSavepointDir: --drain stops into state.savepoints.dir, draining", async () => {
    const savepoints = path.join(base, "default-savepoints");
    const { execution, rest } = await runningJob({ "state.savepoints.dir": savepoints });
    const { code, stdout, stderr } = await sluice(
      "stop",
      "--drain",
      execution.jobId.toString(),
      "--jobmanager",
      rest,
    );
    expect(code, stderr).toBe(0);
    expect(stdout).toContain("(drain)");
    expect(path.dirname(printedFolder(stdout))).toBe(savepoints);
    expect((await execution.terminated).status).toBe("FINISHED");
  }, 60_000);

  it("testUnknownJobId: exits 1 naming the job the endpoint does not know", async () => {
    const { execution, rest } = await runningJob();
    const unknown = "f".repeat(32);
    const { code, stderr } = await sluice("stop", unknown, "--jobmanager", rest);
    expect(code).toBe(1);
    expect(stderr).toContain(`job ${unknown} not found`);
    execution.cancel();
    await execution.terminated;
  }, 60_000);
});
