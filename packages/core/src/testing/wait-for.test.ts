import { describe, expect, it } from "vitest";
import { ErrorCodes, TimeoutError } from "../errors.js";
import { expectRejection } from "./assertions.js";
import { waitFor } from "./wait-for.js";

describe("waitFor", () => {
  it("resolves once the condition holds", async () => {
    let checks = 0;
    await waitFor(() => ++checks === 3, { what: "the third check" });
    expect(checks).toBe(3);
  });

  it("rejects with a TimeoutError naming what it waited for", async () => {
    await expectRejection(
      waitFor(() => false, { what: "a condition that never holds", timeoutMs: 20 }),
      TimeoutError,
      ErrorCodes.TIMEOUT,
      "timed out after 20 ms waiting for a condition that never holds",
    );
  });

  it("rejects at once with the error the condition throws", async () => {
    // A timeout longer than the test's own: retrying the error away would fail the test.
    await expect(
      waitFor(
        () => {
          throw new Error("broken condition");
        },
        { what: "anything", timeoutMs: 60_000 },
      ),
    ).rejects.toThrowError("broken condition");
  });
});
