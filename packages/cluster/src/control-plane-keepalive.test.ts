import { Socket } from "node:net";
import { waitFor } from "@sluice/core/testing";
import { afterEach, expect, it, vi } from "vitest";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

afterEach(async () => {
  vi.restoreAllMocks();
  await closeTestCluster();
});

it("turns TCP keepalive on at both ends of a control connection, never sooner than heartbeat.timeout", async () => {
  // Node offers no getter for SO_KEEPALIVE: record the calls on real sockets instead.
  const calls: { local: string; enable: boolean | undefined; delay: number | undefined }[] = [];
  const original = Socket.prototype.setKeepAlive;
  vi.spyOn(Socket.prototype, "setKeepAlive").mockImplementation(function (
    this: Socket,
    enable?: boolean,
    delay?: number,
  ) {
    calls.push({ local: `${this.localPort}`, enable, delay });
    return original.call(this, enable, delay);
  });
  // libuv probes every second, ten times, once a connection was idle for the delay: a delay of
  // heartbeat.timeout (rounded up to seconds) lets the heartbeat decide first.
  const jobManager = await startJobManager({ "heartbeat.timeout": "2500ms" });
  await startTaskManager(jobManager);
  await waitFor(() => jobManager.taskManagers.length === 1, { what: "the registration" });
  const control = calls.filter((c) => c.enable === true && c.delay === 3_000);
  // The job manager's accepted socket (local port = its port) and the task manager's.
  expect(control.some((c) => c.local === `${jobManager.port}`)).toBe(true);
  expect(control.some((c) => c.local !== `${jobManager.port}`)).toBe(true);
  expect(calls.filter((c) => c.enable === true && (c.delay ?? 0) < 3_000)).toEqual([]);
});
