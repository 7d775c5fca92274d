import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { JobThrottles, MAX_LAG_MS, RatePacer } from "./throttle.js";

/** Whether `promise` settles before the event loop's next turn (i.e. without sleeping). */
async function settlesAtOnce(promise: Promise<void>): Promise<boolean> {
  let settled = false;
  void promise.then(() => {
    settled = true;
  });
  await nextTurn();
  const atOnce = settled;
  await promise;
  return atOnce;
}

describe("RatePacer", () => {
  it("lets records through at once while they are not due ahead of the rate, and sleeps when they are", async () => {
    let now = 0;
    const pacer = new RatePacer(
      () => 1_000,
      () => now,
    );
    expect(await settlesAtOnce(pacer.pace(0))).toBe(true);
    now = 50;
    expect(await settlesAtOnce(pacer.pace(10))).toBe(true); // due at 10 ms
    expect(await settlesAtOnce(pacer.pace(60))).toBe(false); // due at 70 ms: sleeps 20 ms
  });

  it("does not let a task held back by back-pressure burst to catch up: its schedule restarts", async () => {
    let now = 0;
    const pacer = new RatePacer(
      () => 1_000,
      () => now,
    );
    await pacer.pace(0);
    now = 10 + MAX_LAG_MS + 1_000; // 10 records were due at 10 ms; the task was held back
    expect(await settlesAtOnce(pacer.pace(10))).toBe(true);
    // From now on at the rate again: 30 records are due 30 ms from now, not long ago.
    expect(await settlesAtOnce(pacer.pace(30))).toBe(false);
  });

  it("never paces without a rate", async () => {
    const pacer = new RatePacer(() => undefined);
    expect(await settlesAtOnce(pacer.pace(1_000_000))).toBe(true);
    expect(pacer.batchSize(8192)).toBe(8192);
  });
});

describe("JobThrottles", () => {
  it("gives a job's count subtasks the limit its message set over the one they started with, and forgets it with its last subtask", () => {
    const throttles = new JobThrottles();
    const first = throttles.track("job-a", 100);
    const second = throttles.track("job-a", 100);
    const other = throttles.track("job-b", undefined);
    expect(first.limit()).toBe(100);
    throttles.setLimit("job-a", 5);
    expect([first.limit(), second.limit(), other.limit()]).toEqual([5, 5, undefined]);
    throttles.setLimit("job-a", null);
    expect(first.limit()).toBeUndefined();
    first.done();
    first.done();
    expect(second.limit()).toBeUndefined();
    second.done();
    // A new subtask of the job (a restart) starts from its own limit again.
    expect(throttles.track("job-a", 100).limit()).toBe(100);
    other.done();
  });
});
