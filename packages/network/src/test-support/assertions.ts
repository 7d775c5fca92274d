import type { ErrorCode, SluiceError, SluiceErrorClass } from "@sluice/core";
import { expect } from "vitest";

/** Unwraps a value a test knows is there (a buffer the pool must hand out). */
export function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("expected a value");
  return value;
}

/** Asserts that `caught` is a `cls` with `code` and the class's `name`; returns it. */
export function expectSluiceError(
  caught: unknown,
  cls: SluiceErrorClass,
  code: ErrorCode,
): SluiceError {
  expect(caught).toBeInstanceOf(cls);
  const error = caught as SluiceError;
  expect(error.code).toBe(code);
  expect(error.name).toBe(cls.name);
  return error;
}

/** Runs `fn`, which must throw a `cls` with `code`; returns the error. */
export function expectError(
  fn: () => unknown,
  cls: SluiceErrorClass,
  code: ErrorCode,
): SluiceError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  return expectSluiceError(caught, cls, code);
}
