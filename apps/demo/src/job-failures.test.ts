import { getEventListeners, once } from "node:events";
import { describe, expect, it } from "vitest";
import {
  failureLines,
  JobFailedError,
  JobFailures,
  settlesWithin,
  untilAborted,
} from "./job-failures.js";

/** A promise that never settles: what a wait on a vanished peer looks like. */
const never = () => new Promise<never>(() => {});

describe("JobFailures", () => {
  it("records each message once, aborts its signal on the first, and orders by rank", () => {
    const failures = new JobFailures();
    expect(failures.signal.aborted).toBe(false);
    failures.record(3, "task Count (1/2)#0 failed: peer vanished");
    expect(failures.signal.aborted).toBe(true);
    expect(failures.signal.reason).toBeInstanceOf(JobFailedError);
    failures.record(0, "task manager 1 was killed by signal SIGKILL", 1);
    failures.record(3, "task Count (1/2)#0 failed: peer vanished");
    failures.record(2, "task manager 0 exited with code 2 while shutting down", 2);
    expect(failures.byRank().map((f) => [f.rank, f.exitCode])).toEqual([
      [0, 1],
      [2, 2],
      [3, 1],
    ]);
  });

  it("ends a wait with JobFailedError as soon as a failure is recorded", async () => {
    const failures = new JobFailures();
    const waiting = failures.phase(never());
    failures.record(1, "the shuffle master failed: boom");
    await expect(waiting).rejects.toBeInstanceOf(JobFailedError);
  });

  it("fails fast when the job failed before the wait began", async () => {
    const failures = new JobFailures();
    failures.record(1, "lost");
    await expect(failures.phase(Promise.resolve(1))).rejects.toBeInstanceOf(JobFailedError);
  });

  it("records a timeout as a failure that names what was awaited", async () => {
    const failures = new JobFailures();
    await expect(
      failures.phase(never(), { ms: 50, what: "the task managers to exit" }),
    ).rejects.toBeInstanceOf(JobFailedError);
    expect(failures.byRank()).toEqual([
      {
        rank: 2,
        message: "timed out after 0.05 s waiting for the task managers to exit",
        exitCode: 1,
      },
    ]);
  });

  it("passes the awaited value and error through, and an expired deadline records nothing", async () => {
    const failures = new JobFailures();
    await expect(failures.phase(Promise.resolve(7), { ms: 30, what: "x" })).resolves.toBe(7);
    const error = new Error("call failed");
    await expect(failures.phase(Promise.reject(error), { ms: 30, what: "y" })).rejects.toBe(error);
    // Past both deadlines: the waits are over, so their timeouts must not count as failures.
    await once(AbortSignal.timeout(200), "abort");
    expect(failures.byRank()).toEqual([]);
    expect(failures.signal.aborted).toBe(false);
  });
});

describe("untilAborted", () => {
  it("rejects with the signal's reason, and leaves no listener on a signal that outlives it", async () => {
    const controller = new AbortController();
    const { signal } = controller;
    const listeners = () => getEventListeners(signal, "abort").length;
    await expect(untilAborted(Promise.resolve("done"), signal)).resolves.toBe("done");
    expect(listeners()).toBe(0);
    const waiting = untilAborted(never(), signal);
    expect(listeners()).toBe(1);
    const reason = new Error("stop");
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(listeners()).toBe(0);
  });
});

describe("settlesWithin", () => {
  it("is true for a promise that settles either way, false for one that does not in time", async () => {
    await expect(settlesWithin(Promise.resolve(), 5_000)).resolves.toBe(true);
    await expect(settlesWithin(Promise.reject(new Error("x")), 5_000)).resolves.toBe(true);
    await expect(settlesWithin(never(), 30)).resolves.toBe(false);
  });
});

describe("failureLines", () => {
  const root = { rank: 0, message: "task manager 1 was killed by signal SIGKILL", exitCode: 1 };
  const consequence = { rank: 3, message: "task Count (2/2)#0 failed: peer vanished", exitCode: 1 };

  it("names the root cause, then the others, then the local processes", () => {
    expect(
      failureLines([root, consequence], {
        local: [
          { pid: 11, exited: true },
          { pid: 12, exited: false },
        ],
      }),
    ).toEqual([
      "error: the job failed: task manager 1 was killed by signal SIGKILL",
      "  also: task Count (2/2)#0 failed: peer vanished",
      "could not stop task managers with pids 12",
    ]);
    expect(failureLines([root], { local: [{ pid: 11, exited: true }] })).toEqual([
      "error: the job failed: task manager 1 was killed by signal SIGKILL",
      "all 1 task manager processes have exited",
    ]);
  });

  it("counts the standalone task managers that shut down and were lost", () => {
    expect(failureLines([root], { registered: 3, stopped: 1, lost: 2 })).toEqual([
      "error: the job failed: task manager 1 was killed by signal SIGKILL",
      "1 of 3 registered task managers shut down on request; 2 were lost",
    ]);
  });
});
