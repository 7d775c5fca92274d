import { describe, expect, it } from "vitest";
import { ErrorCodes, IllegalStateError, TimeoutError } from "../errors.js";
import { expectError, expectRejection } from "./assertions.js";

describe("expectError and expectRejection", () => {
  it("fail when nothing is thrown or rejected", async () => {
    expect(() => expectError(() => 1, IllegalStateError, ErrorCodes.ILLEGAL_STATE)).toThrowError(
      /returned normally/,
    );
    await expect(
      expectRejection(Promise.resolve(1), IllegalStateError, ErrorCodes.ILLEGAL_STATE),
    ).rejects.toThrowError(/but it fulfilled/);
  });

  it("fail on another error class, code or message", () => {
    const thrower = () => {
      throw new IllegalStateError("writer closed");
    };
    expect(
      expectError(thrower, IllegalStateError, ErrorCodes.ILLEGAL_STATE, "closed").message,
    ).toBe("writer closed");
    expect(() => expectError(thrower, TimeoutError, ErrorCodes.TIMEOUT)).toThrowError();
    expect(() =>
      expectError(thrower, IllegalStateError, ErrorCodes.ILLEGAL_STATE, "open"),
    ).toThrowError();
  });
});
