/**
 * Job messages end to end: `POST /jobs/:jobid/messages/:name` on the job manager's REST endpoint
 * reaches the handler the job's user code registered (`UserCode.messages`) on a task manager in
 * another process, over the control plane, and its reply comes back; unknown messages, failing
 * handlers and ended jobs are refused with what went wrong.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { JobGraph } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { closeTestCluster, startJobManager } from "../test-support/test-cluster.js";
import type { JobMessageReplies } from "./job-message-delivery.js";
import { WebMonitorEndpoint } from "./web-monitor-endpoint.js";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
// It runs the compiled packages, which vitest's global set-up builds.
const CHILD = path.join(PACKAGE_DIR, "src/test-support/message-task-manager.mjs");

const children = new Set<ChildProcess>();
const endpoints: WebMonitorEndpoint[] = [];
afterEach(async () => {
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
  await closeTestCluster();
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  children.clear();
});

function post(endpoint: WebMonitorEndpoint, route: string, body: string) {
  return fetch(new URL(route, endpoint.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
}

describe("job messages", () => {
  it("reach the job's handler on a task manager in another process and bring its reply back", async () => {
    const jobManager = await startJobManager({ "rest.port": 0 });
    const child = spawn(process.execPath, [CHILD, jobManager.host, String(jobManager.port)], {
      cwd: PACKAGE_DIR,
      stdio: ["ignore", "ignore", "inherit"],
    });
    children.add(child);
    const [taskManager] = await jobManager.waitForTaskManagers(1, 20_000);
    const endpoint = await WebMonitorEndpoint.start(jobManager);
    endpoints.push(endpoint);
    const graph = new JobGraph("waiting job");
    graph.addVertex({ name: "Wait", parallelism: 2, invokable: "wait" });
    const execution = await jobManager.deploy(graph);
    const jid = execution.jobId.toString();
    const dataPort = taskManager?.location.dataPort;

    // Both subtasks run on the one task manager: it gets the message once.
    let where: Response | undefined;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      where = await post(endpoint, `jobs/${jid}/messages/where`, "null");
      if (where.status !== 409) break;
    }
    expect(where?.status).toBe(200);
    expect(await where?.json()).toEqual({
      replies: [
        {
          "taskmanager-id": taskManager?.location.resourceId.toString(),
          endpoint: `127.0.0.1:${dataPort}`,
          reply: { pid: child.pid, jobId: jid },
        },
      ],
    });

    const unknown = await post(endpoint, `jobs/${jid}/messages/throttle`, "{}");
    expect(unknown.status).toBe(400);
    const refused = (await unknown.json()) as JobMessageReplies & { errors: string[] };
    expect(refused.errors[0]).toContain('has no message "throttle"');
    expect(refused.replies[0]?.error).toEqual({
      code: "SLUICE_ERR_INVALID_ARGUMENT",
      message: expect.stringContaining("known: fail, stop, where"),
    });
    const failing = await post(endpoint, `jobs/${jid}/messages/fail`, "{}");
    expect(failing.status).toBe(502);
    expect(((await failing.json()) as JobMessageReplies).replies[0]?.error).toEqual({
      code: "SLUICE_ERR_ILLEGAL_STATE",
      message: "the job's handler fails on purpose",
    });

    const stop = await post(endpoint, `jobs/${jid}/messages/stop`, '{"why":"the test is done"}');
    expect(stop.status).toBe(200);
    expect(((await stop.json()) as JobMessageReplies).replies[0]?.reply).toEqual({
      stopped: 2,
      payload: { why: "the test is done" },
    });
    expect((await execution.terminated).status).toBe("FINISHED");
    const ended = await post(endpoint, `jobs/${jid}/messages/where`, "null");
    expect(ended.status).toBe(409);
    expect(((await ended.json()) as { errors: string[] }).errors[0]).toContain(
      "has ended (FINISHED)",
    );
  }, 60_000);
});
