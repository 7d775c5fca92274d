import { expect } from "vitest";
import type { ErrorCode, SluiceError, SluiceErrorClass } from "../errors.js";

/** Unwraps a value a test knows is there (a buffer the pool must hand out). */
export function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("expected a value");
  return value;
}

/**
 * Asserts that `caught` is a `cls` with `code`, the class's `name` and a message containing every
 * one of `messageFragments`; returns it.
 */
export function expectSluiceError(
  caught: unknown,
  cls: SluiceErrorClass,
  code: ErrorCode,
  ...messageFragments: string[]
): SluiceError {
  expect(caught).toBeInstanceOf(cls);
  const error = caught as SluiceError;
  expect(error.code).toBe(code);
  expect(error.name).toBe(cls.name);
  for (const fragment of messageFragments) expect(error.message).toContain(fragment);
  return error;
}

/**
 * Runs `fn`, which must throw a `cls` with `code` (and a message containing every one of
 * `messageFragments`); returns the error. Fails when `fn` returns normally.
 */
export function expectError(
  fn: () => unknown,
  cls: SluiceErrorClass,
  code: ErrorCode,
  ...messageFragments: string[]
): SluiceError {
  try {
    fn();
  } catch (error) {
    return expectSluiceError(error, cls, code, ...messageFragments);
  }
  return expect.fail(`expected the call to throw ${cls.name} (${code}), but it returned normally`);
}

/**
 * Awaits `promise`, which must reject with a `cls` with `code` (and a message containing every one
 * of `messageFragments`); resolves with the error. Fails when the promise fulfils.
 */
export async function expectRejection(
  promise: Promise<unknown>,
  cls: SluiceErrorClass,
  code: ErrorCode,
  ...messageFragments: string[]
): Promise<SluiceError> {
  try {
    await promise;
  } catch (error) {
    return expectSluiceError(error, cls, code, ...messageFragments);
  }
  return expect.fail(`expected the promise to reject with ${cls.name} (${code}), but it fulfilled`);
}
