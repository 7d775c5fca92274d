import { ErrorCodes, IllegalArgumentError, IllegalStateError } from "@sluice/core";
import { expectError } from "@sluice/core/testing";

/** Asserts that `fn` throws a Sluice IllegalArgumentError whose message contains every fragment. */
export function expectIllegalArgument(fn: () => unknown, ...fragments: string[]): void {
  expectError(fn, IllegalArgumentError, ErrorCodes.INVALID_ARGUMENT, ...fragments);
}

/** Asserts that `fn` throws a Sluice IllegalStateError whose message contains every fragment. */
export function expectIllegalState(fn: () => unknown, ...fragments: string[]): void {
  expectError(fn, IllegalStateError, ErrorCodes.ILLEGAL_STATE, ...fragments);
}
