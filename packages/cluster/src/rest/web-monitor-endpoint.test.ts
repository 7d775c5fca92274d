import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConfigurationError } from "@sluice/core";
import { blockEventLoop, expectRejection, waitFor } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobManager } from "../job-manager.js";
import { ratedJob, ratedUserCode } from "../test-support/rated-job.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "../test-support/test-cluster.js";
import type { JobExceptionsInfo } from "./execution-graph-info.js";
import type { JobDetailsInfo, JobOverviewInfo } from "./job-details-info.js";
import { listenOnRestPort } from "./listen-on-rest-port.js";
import { WebMonitorEndpoint, type WebMonitorEndpointOptions } from "./web-monitor-endpoint.js";

let checkpointsDir: string;
const endpoints: WebMonitorEndpoint[] = [];
beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-rest-"));
});
afterEach(async () => {
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
  await closeTestCluster();
  await rm(checkpointsDir, { recursive: true, force: true });
});

/** A job manager with two task managers of the rated job, and its REST endpoint. */
async function startCluster(
  overrides: Readonly<Record<string, unknown>> = {},
  options: WebMonitorEndpointOptions = {},
  initialRate?: number,
): Promise<{ jobManager: JobManager; endpoint: WebMonitorEndpoint; warnings: string[] }> {
  const warnings: string[] = [];
  const jobManager = await startJobManager({
    "rest.port": 0,
    "metrics.fetcher.update-interval": "0ms",
    "state.checkpoints.dir": checkpointsDir,
    ...overrides,
  });
  for (let i = 0; i < 2; i++) await startTaskManager(jobManager, {}, ratedUserCode(initialRate));
  await jobManager.waitForTaskManagers(2, 10_000);
  const endpoint = await WebMonitorEndpoint.start(jobManager, {
    onWarning: (message) => warnings.push(message),
    ...options,
  });
  endpoints.push(endpoint);
  return { jobManager, endpoint, warnings };
}

async function get<T>(endpoint: WebMonitorEndpoint, route: string): Promise<T> {
  const response = await fetch(new URL(route, endpoint.url));
  expect(response.status, `GET ${route}`).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/json");
  return (await response.json()) as T;
}

/** A raw HTTP request (fetch sets Origin and content types of its own). */
function send(
  endpoint: WebMonitorEndpoint,
  method: string,
  route: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(new URL(route, endpoint.url), { method, headers }, (response) => {
      let text = "";
      response.on("data", (chunk) => {
        text += String(chunk);
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    request.on("error", reject);
    request.end(body);
  });
}

const JSON_TYPE = { "content-type": "application/json" };

describe("the job manager's REST endpoint", () => {
  it("answers Flink's routes for a running job, then keeps its final state once it finished", async () => {
    const { jobManager, endpoint } = await startCluster(
      {
        "execution.checkpointing.interval": "100ms",
        // Not used without internal TLS: here to be hidden by /jobmanager/config.
        "security.ssl.internal.key-password": "hunter2",
      },
      {},
      2_000,
    );
    const execution = await jobManager.deploy(ratedJob("rated numbers", 200_000));
    const jid = execution.jobId.toString();

    const config = await get<Record<string, unknown>>(endpoint, "config");
    expect(config).toMatchObject({ "refresh-interval": 3000, features: { "web-cancel": true } });
    expect(await get(endpoint, "jobs")).toEqual({ jobs: [{ id: jid, status: "RUNNING" }] });
    expect(await get(endpoint, "overview")).toMatchObject({
      taskmanagers: 2,
      "jobs-running": 1,
      "jobs-finished": 0,
      "shuffle-plugin": "@sluice/shuffle-tcp#TcpShuffleServiceFactory",
    });
    // The job manager's configuration, as Flink's /jobmanager/config lists it.
    const jobManagerConfig = await get<{ key: string; value: string }[]>(
      endpoint,
      "jobmanager/config",
    );
    expect(jobManagerConfig).toContainEqual({
      key: "execution.checkpointing.interval",
      value: "100ms",
    });
    expect(jobManagerConfig).toContainEqual({
      key: "security.ssl.internal.key-password",
      value: "******",
    });
    expect(jobManagerConfig.map((entry) => entry.key)).toEqual(
      [...jobManagerConfig.map((entry) => entry.key)].sort(),
    );
    const taskManagers = await get<{ taskmanagers: { id: string; dataPort: number }[] }>(
      endpoint,
      "taskmanagers",
    );
    expect(taskManagers.taskmanagers.map((tm) => tm.id).sort()).toEqual(
      jobManager.taskManagers.map((tm) => tm.location.resourceId.toString()).sort(),
    );

    // The throttled sinks keep the numbers back-pressured; metrics arrive with the fetches.
    let details: JobDetailsInfo | undefined;
    await waitFor(
      async () => {
        details = await get<JobDetailsInfo>(endpoint, `jobs/${jid}`);
        const [numbers] = details.vertices;
        return numbers?.["backpressure-level"] === "high";
      },
      { what: "the numbers to be back-pressured HIGH", timeoutMs: 20_000, intervalMs: 200 },
    );
    const job = details as JobDetailsInfo;
    expect(job).toMatchObject({ jid, name: "rated numbers", state: "RUNNING", "end-time": -1 });
    expect(job["status-counts"].RUNNING).toBe(4);
    const [numbers, sink] = job.vertices;
    expect(numbers).toMatchObject({ name: "Numbers", parallelism: 2, status: "RUNNING" });
    expect(sink?.["busy-time-ms-per-second"]).toBeGreaterThan(0);
    expect(sink?.subtasks.map((s) => s.subtask)).toEqual([0, 1]);
    expect(sink?.subtasks[0]).toMatchObject({ status: "RUNNING", attempt: 0 });
    expect(sink?.subtasks[0]?.endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(sink?.subtasks[0]?.["in-pool-usage"]).not.toBeNull();
    expect(sink?.subtasks[0]?.["out-pool-usage"]).toBeNull();
    // Running subtasks were deployed, and have not ended.
    expect(sink?.subtasks[0]?.["start-time"]).toBeGreaterThan(0);
    expect(sink?.subtasks[0]?.duration).toBeGreaterThanOrEqual(0);
    expect(sink?.subtasks[0]?.["end-time"]).toBe(-1);
    expect(sink?.["start-time"]).toBe(
      Math.min(...(sink?.subtasks ?? []).map((t) => t["start-time"])),
    );
    expect(sink?.["end-time"]).toBe(-1);
    expect(await get(endpoint, `jobs/${jid}/execution-result`)).toEqual({
      status: { id: "IN_PROGRESS" },
    });
    // A task manager's own metrics, by Flink's ids: its network memory, all of it free or in use.
    const [first] = jobManager.taskManagers;
    const tmId = first?.location.resourceId.toString();
    const ids = await get<{ id: string }[]>(endpoint, `taskmanagers/${tmId}/metrics`);
    expect(ids.map((m) => m.id)).toContain("Status.Shuffle.Netty.TotalMemorySegments");
    expect(ids.map((m) => m.id).filter((id) => id.startsWith("job."))).toEqual([]);
    const segments = await get<{ id: string; value: string }[]>(
      endpoint,
      `taskmanagers/${tmId}/metrics?get=Status.Shuffle.Netty.TotalMemorySegments,Status.Shuffle.Netty.AvailableMemorySegments,no.such.metric`,
    );
    expect(segments.map((m) => m.id)).toEqual([
      "Status.Shuffle.Netty.TotalMemorySegments",
      "Status.Shuffle.Netty.AvailableMemorySegments",
    ]);
    expect(Number(segments[0]?.value)).toBeGreaterThan(Number(segments[1]?.value));
    expect(job.plan.nodes[1]?.inputs).toEqual([
      { num: 0, id: numbers?.id, ship_strategy: "HASH", exchange: "pipelined_bounded" },
    ]);
    const vertex = await get<{ id: string; subtasks: unknown[] }>(
      endpoint,
      `jobs/${jid}/vertices/${sink?.id}`,
    );
    expect(vertex.id).toBe(sink?.id);
    expect(vertex.subtasks).toHaveLength(2);
    await waitFor(
      async () =>
        (await get<{ counts: { completed: number } }>(endpoint, `jobs/${jid}/checkpoints`)).counts
          .completed >= 1,
      { what: "a completed checkpoint", timeoutMs: 20_000, intervalMs: 100 },
    );

    // Lifted, the job finishes; what it ended with stays.
    await send(
      endpoint,
      "POST",
      `jobs/${jid}/messages/rate`,
      JSON_TYPE,
      '{"recordsPerSecond":null}',
    );
    expect((await execution.terminated).status).toBe("FINISHED");
    await waitFor(
      async () => (await get<JobDetailsInfo>(endpoint, `jobs/${jid}`)).state === "FINISHED",
      { what: "the finished state", timeoutMs: 5_000, intervalMs: 50 },
    );
    const finished = await get<JobDetailsInfo>(endpoint, `jobs/${jid}`);
    expect(finished["end-time"]).toBeGreaterThanOrEqual(finished["start-time"]);
    expect(finished.timestamps.FINISHED).toBe(finished["end-time"]);
    expect(finished["status-counts"].FINISHED).toBe(4);
    expect(finished.vertices[1]?.subtasks.map((s) => s.status)).toEqual(["FINISHED", "FINISHED"]);
    expect(finished["root-cause"]).toBeNull();
    // Each vertex ended when its last subtask did.
    for (const done of finished.vertices) {
      expect(done["end-time"]).toBe(Math.max(...done.subtasks.map((t) => t["end-time"])));
      expect(done.duration).toBe(done["end-time"] - done["start-time"]);
    }
    // What the tasks returned: each sink subtask's count and sum, 200,000 numbers per source.
    const result = await get<{
      status: { id: string };
      "job-execution-result": Record<string, unknown>;
    }>(endpoint, `jobs/${jid}/execution-result`);
    expect(result.status.id).toBe("COMPLETED");
    const sums = (
      result["job-execution-result"]["accumulator-results"] as Record<string, { count: number }[]>
    ).Sink;
    expect(sums?.reduce((total, s) => total + s.count, 0)).toBe(400_000);
    expect(result["job-execution-result"]).toMatchObject({
      id: jid,
      "application-status": "SUCCEEDED",
      "accumulator-results": { Numbers: [200_000, 200_000] },
      restarts: 0,
      "rerun-tasks": [],
      "failed-task": null,
    });
    expect(
      (result["job-execution-result"].checkpoints as { completed: number }).completed,
    ).toBeGreaterThanOrEqual(1);
    const overview = await get<{ jobs: JobOverviewInfo[] }>(endpoint, "jobs/overview");
    expect(overview.jobs).toMatchObject([
      { jid, state: "FINISHED", tasks: { total: 4, finished: 4, running: 0 } },
    ]);
    expect(await get(endpoint, "overview")).toMatchObject({
      "jobs-running": 0,
      "jobs-finished": 1,
    });
    const checkpoints = await get<{ counts: { completed: number } }>(
      endpoint,
      `jobs/${jid}/checkpoints`,
    );
    expect(checkpoints.counts.completed).toBeGreaterThanOrEqual(1);
    expect(
      (await get<JobExceptionsInfo>(endpoint, `jobs/${jid}/exceptions`))["root-exception"],
    ).toBeNull();
    // Nothing of the job's runtime is kept: the job manager let go of it too.
    expect(jobManager.jobs).toEqual([]);
  });

  it("refuses unknown jobs, vertices, methods and paths with Flink's error body", async () => {
    const { jobManager, endpoint } = await startCluster({}, {}, 100);
    const execution = await jobManager.deploy(ratedJob("rated numbers", 1_000_000));
    const jid = execution.jobId.toString();
    const unknownJob = await send(endpoint, "GET", "jobs/0123456789abcdef0123456789abcdef", {});
    expect(unknownJob.status).toBe(404);
    expect(JSON.parse(unknownJob.body)).toEqual({
      errors: ["job 0123456789abcdef0123456789abcdef not found"],
    });
    expect((await send(endpoint, "GET", `jobs/${jid}/vertices/nope`, {})).status).toBe(404);
    const wrongMethod = await send(endpoint, "DELETE", `jobs/${jid}`, {});
    expect(wrongMethod.status).toBe(405);
    expect(JSON.parse(wrongMethod.body).errors[0]).toContain("GET, PATCH");
    expect((await send(endpoint, "GET", "no/such/route", {})).status).toBe(404);
    expect((await send(endpoint, "PATCH", `jobs/${jid}?mode=stop`, JSON_TYPE)).status).toBe(400);
    execution.cancel();
  });

  it("cancels a job with PATCH /jobs/:jobid?mode=cancel and refuses requests of other sites", async () => {
    const { jobManager, endpoint, warnings } = await startCluster({}, {}, 100);
    const execution = await jobManager.deploy(ratedJob("rated numbers", 1_000_000));
    const route = `jobs/${execution.jobId}?mode=cancel`;
    const port = endpoint.port;
    // A form or no-cors fetch of another site: text/plain, with that site's Origin.
    const crossSite = await send(endpoint, "PATCH", route, {
      "content-type": "text/plain",
      origin: "http://evil.example",
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body).toContain("http://evil.example");
    // DNS rebinding: a name of the attacker's that resolves to loopback.
    const rebound = await send(endpoint, "PATCH", route, {
      ...JSON_TYPE,
      host: `evil.example:${port}`,
    });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toContain("is not this endpoint's address");
    // The endpoint's own origin, but not declared JSON.
    expect(
      (await send(endpoint, "PATCH", route, { origin: `http://127.0.0.1:${port}` })).status,
    ).toBe(415);
    expect(execution.status).toBe("RUNNING");
    expect(warnings.filter((w) => w.startsWith("refused PATCH"))).toHaveLength(3);

    const accepted = await send(endpoint, "PATCH", route, {
      ...JSON_TYPE,
      origin: `http://127.0.0.1:${port}`,
    });
    expect(accepted.status).toBe(202);
    expect((await execution.terminated).status).toBe("CANCELED");
    await waitFor(async () => (await send(endpoint, "PATCH", route, JSON_TYPE)).status === 409, {
      what: "a second cancel to be refused",
      timeoutMs: 5_000,
    });
    const exceptions = await get<JobExceptionsInfo>(endpoint, `jobs/${execution.jobId}/exceptions`);
    expect(exceptions["root-exception"]).toContain("canceled through the REST endpoint");
  });

  it("refuses a body beyond rest.server.max-content-length with 413 before parsing it", async () => {
    const { jobManager, endpoint } = await startCluster(
      { "rest.server.max-content-length": "1kb" },
      {},
      100,
    );
    const execution = await jobManager.deploy(ratedJob("rated numbers", 1_000_000));
    const route = `jobs/${execution.jobId}/messages/rate`;
    const big = JSON.stringify({ recordsPerSecond: 5, padding: "x".repeat(2048) });
    const refused = await send(endpoint, "POST", route, JSON_TYPE, big);
    expect(refused.status).toBe(413);
    expect(refused.body).toContain("rest.server.max-content-length");
    expect((await send(endpoint, "POST", route, JSON_TYPE, "{not json")).status).toBe(400);
    expect((await send(endpoint, "POST", route, JSON_TYPE, '{"recordsPerSecond":5}')).status).toBe(
      200,
    );
    execution.cancel();
  });

  it("closes connections beyond rest.server.max-connections and silent ones after rest.server.request-timeout", async () => {
    const { endpoint, warnings } = await startCluster(
      { "rest.server.max-connections": 3, "rest.server.request-timeout": "300ms" },
      {},
    );
    const { port } = endpoint;
    const sockets: Socket[] = [];
    const closed: Promise<void>[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const socket = new Socket();
        sockets.push(socket);
        closed.push(new Promise((resolve) => socket.once("close", () => resolve())));
        socket.on("error", () => {});
        // Flowing, so the server's close is read: a paused socket that is never read may never
        // see the end of its stream, and then never emits 'close'.
        socket.resume();
        // One beyond the cap may be reset before its connect is reported: then it only closes.
        await new Promise<void>((resolve) => {
          socket.once("close", () => resolve());
          socket.connect(port, "127.0.0.1", resolve);
        });
      }
      // Two beyond the cap are closed at once; the three silent ones within the timeout.
      const started = performance.now();
      await Promise.all(closed);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(warnings.some((w) => w.includes("rest.server.max-connections"))).toBe(true);
      // The endpoint still serves.
      expect((await fetch(new URL("config", endpoint.url))).status).toBe(200);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it("answers a request that arrived whole while the event loop was blocked past rest.server.request-timeout, and 408s one that never completes", async () => {
    const timeoutMs = 300;
    const { endpoint } = await startCluster({ "rest.server.request-timeout": `${timeoutMs}ms` });
    const connect = async () => {
      const socket = new Socket();
      const state = { answer: "", closed: false };
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => {
        state.answer += chunk;
      });
      socket.on("error", () => {});
      socket.once("close", () => {
        state.closed = true;
      });
      await new Promise<void>((resolve) => socket.connect(endpoint.port, "127.0.0.1", resolve));
      return { socket, state };
    };
    const onTime = await connect();
    const slow = await connect();
    try {
      // Both send half of their headers; the server reads them.
      for (const { socket } of [onTime, slow]) socket.write("GET /config HTTP/1.1\r\nHost: x\r\n");
      await new Promise((resolve) => setTimeout(resolve, 50));
      // One sends the rest, which goes to the kernel at once; then this event loop, the
      // server's too, stalls for three timeouts.
      onTime.socket.write("\r\n");
      blockEventLoop(3 * timeoutMs);
      await waitFor(() => onTime.state.answer.includes("\r\n\r\n") && slow.state.closed, {
        what: "an answer to the complete request, and the incomplete one closed",
        timeoutMs: 10 * timeoutMs,
      });
      expect(onTime.state.answer.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
      expect(slow.state.answer.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout");
    } finally {
      onTime.socket.destroy();
      slow.socket.destroy();
    }
  });

  it("fails to start on a taken rest.port set by the user, naming the key", async () => {
    await withTakenPort(async (port) => {
      const jobManager = await startJobManager({ "rest.port": port });
      await expectRejection(
        WebMonitorEndpoint.start(jobManager),
        ConfigurationError,
        "SLUICE_ERR_CONFIG",
        `127.0.0.1:${port} (rest.port)`,
      );
    });
  });

  it("takes a free port, with a warning, when the default port is taken", async () => {
    await withTakenPort(async (port) => {
      const warnings: string[] = [];
      const server = createHttpServer();
      try {
        await listenOnRestPort(server, { host: "127.0.0.1", port, portIsExplicit: false }, (m) =>
          warnings.push(m),
        );
        expect((server.address() as { port: number }).port).not.toBe(port);
        expect(warnings).toEqual([
          `the REST endpoint's default port ${port} is taken; using a free port (set rest.port to choose one)`,
        ]);
      } finally {
        server.close();
      }
    });
  });
});

/** A port some other server holds, for the time of `use`. */
async function withTakenPort(use: (port: number) => Promise<void>): Promise<void> {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  try {
    await use((holder.address() as { port: number }).port);
  } finally {
    holder.close();
  }
}
