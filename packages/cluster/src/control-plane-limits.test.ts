/**
 * What one control-plane peer can make the job manager hold: each limit met by the peer that
 * breaks it, with a registered task manager beside it that keeps its connection.
 */
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { JobManager } from "./job-manager.js";
import type { RegisteredTaskManager } from "./registered-task-manager.js";
import {
  errorOf,
  RawControlClient,
  terminateRawClients,
  until,
} from "./test-support/raw-control-client.js";
import { closeTestCluster, startJobManager } from "./test-support/test-cluster.js";

const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  terminateRawClients();
  await closeTestCluster();
});

async function start(
  overrides: Readonly<Record<string, unknown>> = {},
  onApplicationMessage?: (name: string, payload: unknown) => unknown,
) {
  const warnings: string[] = [];
  const lost: RegisteredTaskManager[] = [];
  const jobManager = await startJobManager(overrides, {
    onWarning: (message) => warnings.push(message),
    onTaskManagerLost: (taskManager) => lost.push(taskManager),
    ...(onApplicationMessage === undefined
      ? {}
      : {
          onApplicationMessage: (_tm, name, payload) =>
            onApplicationMessage(name, payload) as never,
        }),
  });
  return { jobManager, warnings, lost };
}

/** A raw peer that registered and answers heartbeats. */
async function registered(jobManager: JobManager): Promise<RawControlClient> {
  const client = await RawControlClient.open(jobManager.url);
  client.answerHeartbeats();
  await client.hello();
  expect((await client.register(2, jobManager.plugin)).result).toBeDefined();
  return client;
}

/** A plain TCP connection to the control port (no WebSocket). */
function tcp(jobManager: JobManager): Promise<{ socket: Socket; closed: () => boolean }> {
  return new Promise((resolve, reject) => {
    let closed = false;
    const socket = connect(jobManager.port, "127.0.0.1", () =>
      resolve({ socket, closed: () => closed }),
    );
    sockets.push(socket);
    socket.on("error", () => {});
    socket.on("close", () => {
      closed = true;
    });
    socket.once("error", reject);
  });
}

describe("the control plane's limits", () => {
  it("refuses a message beyond jobmanager.rpc.max-unregistered-message-size before registration, on its length", async () => {
    const { jobManager, warnings } = await start({
      "jobmanager.rpc.max-unregistered-message-size": "4kb",
    });
    const beside = await registered(jobManager);
    const hostile = await RawControlClient.open(jobManager.url);
    hostile.send({ jsonrpc: "2.0", id: 1, method: "hello", params: { pad: "x".repeat(8192) } });
    await until(() => hostile.closed, "the oversized peer to be closed");
    expect(warnings.some((w) => w.includes("jobmanager.rpc.max-unregistered-message-size"))).toBe(
      true,
    );
    // A registered task manager may send more than that.
    const reply = await beside.request(9, "application", { name: "x", payload: "y".repeat(8192) });
    expect(errorOf(reply).message).toContain("handles no messages");
    expect(beside.closed).toBe(false);
  });

  it("closes a registered task manager's connection at a message beyond jobmanager.rpc.max-message-size", async () => {
    const { jobManager, lost } = await start({ "jobmanager.rpc.max-message-size": "64kb" });
    const beside = await registered(jobManager);
    const hostile = await registered(jobManager);
    hostile.send({
      jsonrpc: "2.0",
      id: 3,
      method: "application",
      params: { name: "x", payload: "y".repeat(100 * 1024) },
    });
    await until(() => hostile.closed && lost.length === 1, "the oversized peer to be lost");
    expect(lost[0]?.index).toBe(1);
    expect(beside.closed).toBe(false);
  });

  it("refuses JSON-RPC batches as a whole, handling none of their requests", async () => {
    const { jobManager, warnings } = await start();
    const hostile = await RawControlClient.open(jobManager.url);
    const hello = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "hello",
      params: { version: 1, sluiceVersion: "0", applicationVersion: "", pid: 1, hostname: "h" },
    });
    hostile.send(Array.from({ length: 100 }, (_, i) => hello(i + 1)));
    const reply = await hostile.next();
    expect(Array.isArray(reply)).toBe(false);
    expect(errorOf(reply).message).toContain(
      "a batch of 100 messages; batches are not part of the control plane",
    );
    expect(warnings.filter((w) => w.includes("batch"))).toHaveLength(1);
  });

  it("closes connections beyond jobmanager.rpc.max-connections at once, keeping the open ones", async () => {
    const { jobManager, warnings } = await start({ "jobmanager.rpc.max-connections": 3 });
    const beside = await registered(jobManager);
    const open = [await tcp(jobManager), await tcp(jobManager)];
    const extra = await Promise.all([tcp(jobManager), tcp(jobManager), tcp(jobManager)]);
    await until(() => extra.every((c) => c.closed()), "the connections beyond the cap to close");
    expect(open.some((c) => c.closed())).toBe(false);
    expect(warnings.some((w) => w.includes("jobmanager.rpc.max-connections (3)"))).toBe(true);
    // A slot that frees up is taken again.
    open[0]?.socket.destroy();
    await until(() => open[0]?.closed() === true, "one connection to close");
    const again = await tcp(jobManager);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(again.closed()).toBe(false);
    expect(beside.closed).toBe(false);
  });

  it("closes a connection that registers no TaskExecutor within jobmanager.rpc.registration-timeout", async () => {
    const { jobManager, warnings } = await start({
      "jobmanager.rpc.registration-timeout": "300ms",
      "heartbeat.timeout": "5s",
    });
    const beside = await registered(jobManager);
    const silent = await tcp(jobManager);
    const halfOpen = await tcp(jobManager);
    halfOpen.socket.write("GET /sluice HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n");
    const helloOnly = await RawControlClient.open(jobManager.url);
    await helloOnly.hello();
    await until(
      () => silent.closed() && halfOpen.closed() && helloOnly.closed,
      "every connection that did not register to close",
      5_000,
    );
    expect(
      warnings.filter((w) => w.includes("jobmanager.rpc.registration-timeout")).length,
    ).toBeGreaterThanOrEqual(3);
    expect(beside.closed).toBe(false);
    expect(jobManager.taskManagers[0]?.connected).toBe(true);
  });

  it("stops reading from a peer that does not read its replies once jobmanager.rpc.max-outbound-bytes-per-connection is queued for it, and resumes once it reads", async () => {
    let handled = 0;
    const reply = "r".repeat(16 * 1024);
    // Reading pauses at the budget, and at most two replies in flight follow: 64 KiB + 2 × 16 KiB
    // stays below twice the budget, so the peer is paused, not closed.
    const { jobManager, warnings } = await start(
      {
        "jobmanager.rpc.max-outbound-bytes-per-connection": "64kb",
        "jobmanager.rpc.max-concurrent-requests-per-connection": 2,
        "heartbeat.timeout": "60s",
      },
      () => {
        handled++;
        return reply;
      },
    );
    const slow = await registered(jobManager);
    const answered = new Set<unknown>();
    slow.socket.on("message", (data) => {
      const message = JSON.parse(data.toString()) as { id?: unknown; result?: unknown };
      if (message.result === reply) answered.add(message.id);
    });
    const requests = 2_000;
    slow.socket.pause();
    for (let i = 0; i < requests; i++) {
      slow.send({
        jsonrpc: "2.0",
        id: 100 + i,
        method: "application",
        params: { name: "get", payload: i },
      });
    }
    await until(() => handled > 0, "the first requests to be handled", 20_000);
    // The job manager stops well short of every request while the peer does not read.
    let last = -1;
    await until(
      () => {
        const settled = handled === last;
        last = handled;
        return settled;
      },
      "the job manager to stop reading",
      20_000,
    );
    expect(handled).toBeLessThan(requests / 2);
    // The peer reads again: the held requests are handled, each exactly once, in full.
    slow.socket.resume();
    await until(() => answered.size === requests, "every request to be answered", 30_000);
    expect(handled).toBe(requests);
    expect(slow.closed).toBe(false);
    expect(warnings.filter((w) => w.includes("does not read its replies"))).toEqual([]);
    const beside = await registered(jobManager);
    expect((await beside.request(7, "application", { name: "get", payload: 0 })).result).toBe(
      reply,
    );
  }, 60_000);

  it("closes the connection of a peer once more than twice jobmanager.rpc.max-outbound-bytes-per-connection is queued for it", async () => {
    // Replies of 1 MiB against a 64 KiB budget: once the sockets hold what they take, the replies
    // of the requests in flight queue beyond twice the budget.
    const reply = "r".repeat(1024 * 1024);
    const { jobManager, warnings } = await start(
      { "jobmanager.rpc.max-outbound-bytes-per-connection": "64kb", "heartbeat.timeout": "60s" },
      () => reply,
    );
    const hostile = await registered(jobManager);
    hostile.socket.pause();
    for (let i = 0; i < 64; i++) {
      hostile.send({
        jsonrpc: "2.0",
        id: 100 + i,
        method: "application",
        params: { name: "get", payload: i },
      });
    }
    await until(
      () => warnings.some((w) => w.includes("does not read its replies")),
      "the job manager to give up on the peer",
      20_000,
    );
    expect(warnings.find((w) => w.includes("does not read its replies"))).toContain(
      "jobmanager.rpc.max-outbound-bytes-per-connection",
    );
    // The socket is paused on this side, so its close is seen once it reads again.
    hostile.socket.resume();
    await until(() => hostile.closed, "the connection to close");
    await until(
      () => jobManager.taskManagers[0]?.connected === false,
      "the job manager to see the peer disconnected",
    );
    const beside = await registered(jobManager);
    expect((await beside.request(7, "application", { name: "get", payload: 0 })).result).toBe(
      reply,
    );
  });

  it("handles at most jobmanager.rpc.max-concurrent-requests-per-connection requests of a peer at once", async () => {
    let started = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { jobManager } = await start(
      { "jobmanager.rpc.max-concurrent-requests-per-connection": 8 },
      async () => {
        started++;
        await gate;
        return null;
      },
    );
    const hostile = await registered(jobManager);
    for (let i = 0; i < 200; i++) {
      hostile.send({
        jsonrpc: "2.0",
        id: 100 + i,
        method: "application",
        params: { name: "slow", payload: null },
      });
    }
    await until(() => started >= 8, "the first requests to be handled");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(started).toBe(8);
    release();
    await until(() => started === 200, "every request to be handled once the first ones end");
  });
});
