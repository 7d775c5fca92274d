import { describe, expect, it } from "vitest";
import { deferred } from "./deferred.js";

describe("deferred", () => {
  it("fulfils its promise with the first value it is resolved with", async () => {
    const settled = deferred<number>();
    settled.resolve(1);
    settled.resolve(2);
    settled.reject(new Error("too late"));
    await expect(settled.promise).resolves.toBe(1);
  });

  it("rejects its promise with the reason it is first rejected with", async () => {
    const settled = deferred<string>();
    const reason = new Error("gone");
    settled.reject(reason);
    settled.resolve("too late");
    await expect(settled.promise).rejects.toBe(reason);
  });

  it("stays pending until it is settled", async () => {
    const settled = deferred();
    let done = false;
    void settled.promise.then(() => {
      done = true;
    });
    await new Promise<void>((r) => setImmediate(r));
    expect(done).toBe(false);
    settled.resolve();
    await settled.promise;
    expect(done).toBe(true);
  });
});
