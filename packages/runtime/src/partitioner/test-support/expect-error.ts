import { expect } from "vitest";

/** Runs `fn`, asserts that it throws, and returns what it threw so tests can check code and name. */
export function catchError(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    return error as Error & { code?: string };
  }
  throw new Error("expected the call to throw, but it returned normally");
}

/** Asserts that `fn` throws a Sluice IllegalArgumentError whose message contains every fragment. */
export function expectIllegalArgument(fn: () => unknown, ...fragments: string[]): void {
  const error = catchError(fn);
  expect(error.name).toBe("IllegalArgumentError");
  expect(error.code).toBe("SLUICE_ERR_INVALID_ARGUMENT");
  for (const fragment of fragments) expect(error.message).toContain(fragment);
}

/** Asserts that `fn` throws a Sluice IllegalStateError whose message contains every fragment. */
export function expectIllegalState(fn: () => unknown, ...fragments: string[]): void {
  const error = catchError(fn);
  expect(error.name).toBe("IllegalStateError");
  expect(error.code).toBe("SLUICE_ERR_ILLEGAL_STATE");
  for (const fragment of fragments) expect(error.message).toContain(fragment);
}
