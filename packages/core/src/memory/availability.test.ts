import { describe, expect, it } from "vitest";
import { AVAILABLE, AvailabilityHelper, allOf, anyOf } from "./availability.js";

/** Resolves to true when `promise` settled within the current macrotask, false otherwise. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => {
    settled = true;
  });
  await new Promise<void>((resolve) => setImmediate(resolve));
  return settled;
}

describe("AvailabilityHelper", () => {
  it("starts available with the shared resolved promise", async () => {
    const helper = new AvailabilityHelper();
    expect(helper.isAvailable()).toBe(true);
    expect(helper.getAvailableFuture()).toBe(AVAILABLE);
    expect(await isSettled(helper.getAvailableFuture())).toBe(true);
  });

  it("hands every caller the same pending promise while unavailable", async () => {
    const helper = new AvailabilityHelper();
    helper.resetUnavailable();
    const first = helper.getAvailableFuture();
    expect(helper.isAvailable()).toBe(false);
    expect(first).not.toBe(AVAILABLE);
    expect(helper.getAvailableFuture()).toBe(first);
    helper.resetUnavailable();
    expect(helper.getAvailableFuture()).toBe(first);
    expect(await isSettled(first)).toBe(false);
    helper.resetAvailable();
  });

  it("resolves the pending promise and returns to AVAILABLE on resetAvailable", async () => {
    const helper = new AvailabilityHelper();
    helper.resetUnavailable();
    const pending = helper.getAvailableFuture();
    helper.resetAvailable();
    expect(helper.isAvailable()).toBe(true);
    expect(helper.getAvailableFuture()).toBe(AVAILABLE);
    expect(await isSettled(pending)).toBe(true);
    helper.resetAvailable();
    expect(helper.isAvailable()).toBe(true);
  });

  it("creates a fresh promise for each unavailable period", async () => {
    const helper = new AvailabilityHelper();
    helper.resetUnavailable();
    const first = helper.getAvailableFuture();
    helper.resetAvailable();
    helper.resetUnavailable();
    const second = helper.getAvailableFuture();
    expect(second).not.toBe(first);
    expect(await isSettled(second)).toBe(false);
    helper.resetAvailable();
    expect(await isSettled(second)).toBe(true);
  });
});

describe("anyOf / allOf", () => {
  it("anyOf resolves once any input resolves and is AVAILABLE for no inputs", async () => {
    const a = new AvailabilityHelper();
    const b = new AvailabilityHelper();
    a.resetUnavailable();
    b.resetUnavailable();
    const any = anyOf([a.getAvailableFuture(), b.getAvailableFuture()]);
    expect(await isSettled(any)).toBe(false);
    b.resetAvailable();
    expect(await isSettled(any)).toBe(true);
    a.resetAvailable();
    expect(anyOf([])).toBe(AVAILABLE);
  });

  it("allOf resolves only once every input resolved and is AVAILABLE for no inputs", async () => {
    const a = new AvailabilityHelper();
    const b = new AvailabilityHelper();
    a.resetUnavailable();
    b.resetUnavailable();
    const all = allOf([a.getAvailableFuture(), b.getAvailableFuture()]);
    a.resetAvailable();
    expect(await isSettled(all)).toBe(false);
    b.resetAvailable();
    expect(await isSettled(all)).toBe(true);
    expect(allOf([])).toBe(AVAILABLE);
  });
});
