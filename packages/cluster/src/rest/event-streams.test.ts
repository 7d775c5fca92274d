/**
 * Bounded event streams: 500 clients open a job's event stream and never read. Only
 * `rest.event-streams.max` of them get one (the rest a 503); the streams skip the events their
 * clients have not taken, and are reset once they sent `rest.event-streams.max-bytes` (or took
 * nothing for `rest.event-streams.slow-client-timeout`), so neither the job manager's heap nor
 * the kernel's TCP memory grows with them. A client that reads
 * gets every event meanwhile.
 */
import { readFileSync } from "node:fs";
import { Socket } from "node:net";
import { waitFor } from "@sluice/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { ratedJob, ratedUserCode } from "../test-support/rated-job.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "../test-support/test-cluster.js";
import { WebMonitorEndpoint } from "./web-monitor-endpoint.js";

const CLIENTS = 500;
const MAX_STREAMS = 16;

const sockets: Socket[] = [];
const endpoints: WebMonitorEndpoint[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
  await closeTestCluster();
}, 60_000);

/** The kernel's memory for TCP buffers, in bytes (`/proc/net/sockstat`, counted in pages). */
function kernelTcpMemory(): number {
  const line = readFileSync("/proc/net/sockstat", "utf8")
    .split("\n")
    .find((l) => l.startsWith("TCP:"));
  return Number(/\bmem (\d+)/.exec(line ?? "")?.[1] ?? 0) * 4096;
}

/** A client that sends `GET route` and never reads what comes back; resolves once connected. */
function stalledClient(port: number, route: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    sockets.push(socket);
    socket.on("error", () => {});
    socket.connect(port, "127.0.0.1", () => {
      socket.write(`GET ${route} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      socket.pause();
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

const MB = 1024 * 1024;

describe("the REST endpoint's event streams", () => {
  it("serves at most rest.event-streams.max streams and drops clients that never read, with memory bounded", async () => {
    const jobManager = await startJobManager({
      "rest.port": 0,
      "rest.server.max-connections": 1000,
      "web.refresh-interval": "100ms",
      "rest.event-streams.slow-client-timeout": "2s",
      "rest.event-streams.max-bytes": "256kb",
      "metrics.fetcher.update-interval": "100ms",
    });
    for (let i = 0; i < 2; i++) await startTaskManager(jobManager, {}, ratedUserCode(100));
    await jobManager.waitForTaskManagers(2, 10_000);
    const warnings: string[] = [];
    const endpoint = await WebMonitorEndpoint.start(jobManager, {
      onWarning: (message) => warnings.push(message),
    });
    endpoints.push(endpoint);
    const execution = await jobManager.deploy(ratedJob("rated numbers", 10_000_000));
    const route = `/jobs/${execution.jobId}/events`;

    const heapBefore = process.memoryUsage().heapUsed;
    const rssBefore = process.memoryUsage().rss;
    const tcpBefore = kernelTcpMemory();
    for (let i = 0; i < CLIENTS; i++) await stalledClient(endpoint.port, route);
    await waitFor(() => endpoint.eventStreams === MAX_STREAMS, {
      what: `${MAX_STREAMS} open streams`,
      timeoutMs: 10_000,
    });
    // The others were refused: each connection got a 503 (unread), none a stream.
    expect(endpoint.eventStreams).toBe(MAX_STREAMS);

    // Events every 100 ms, never read: the streams skip, then are closed.
    let peakTcp = 0;
    let peakHeap = 0;
    await waitFor(
      () => {
        peakTcp = Math.max(peakTcp, kernelTcpMemory() - tcpBefore);
        peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed - heapBefore);
        return endpoint.eventStreams === 0;
      },
      { what: "the stalled streams to be closed", timeoutMs: 60_000, intervalMs: 100 },
    );
    const heapAfter = process.memoryUsage().heapUsed - heapBefore;
    const rssAfter = process.memoryUsage().rss - rssBefore;
    console.log(
      `event streams: ${CLIENTS} stalled clients, ${MAX_STREAMS} streams served; heap +${(peakHeap / MB).toFixed(1)} MB at peak, +${(heapAfter / MB).toFixed(1)} MB after; RSS +${(rssAfter / MB).toFixed(1)} MB; kernel TCP memory +${(peakTcp / MB).toFixed(1)} MB at peak`,
    );
    expect(peakHeap).toBeLessThan(64 * MB);
    expect(peakTcp).toBeLessThan(64 * MB);

    // A client that reads gets its events.
    const events = await fetch(new URL(route.slice(1), endpoint.url));
    expect(events.headers.get("content-type")).toBe("text/event-stream");
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while ((text.match(/^data: /gm) ?? []).length < 3) {
      text += new TextDecoder().decode((await reader.read()).value);
    }
    await reader.cancel();
    execution.cancel();
    expect((await execution.terminated).status).toBe("CANCELED");
  }, 120_000);
});
