/**
 * `@sluice/core/testing`: helpers for tests of Sluice and of shuffle plugins. Imports vitest (an
 * optional peer dependency of `@sluice/core`); no production entry point imports this module.
 * Importing it registers the `toHaveAllSegmentsAvailable` matcher.
 */
export { expectError, expectRejection, expectSluiceError, must } from "./assertions.js";
export { blockEventLoop } from "./block-event-loop.js";
export { freePort, type HeldPort, holdPort } from "./held-port.js";
export {
  type SegmentCounting,
  toHaveAllSegmentsAvailable,
} from "./to-have-all-segments-available.js";
export { type WaitForOptions, waitFor } from "./wait-for.js";
