import type { SluiceErrorClass } from "./errors.js";

/**
 * The class this package defines for each of its codes, filled as `errors.ts` defines them: what
 * `reconstructError` rebuilds for a code of this package. Codes defined elsewhere are not here.
 */
const CLASS_BY_CODE = new Map<string, SluiceErrorClass>();

/** Records `cls` as this package's class for `code`. Called by `errors.ts` only. */
export function registerCoreErrorClass(code: string, cls: SluiceErrorClass): void {
  CLASS_BY_CODE.set(code, cls);
}

/** This package's class for `code`, or undefined when another package defines it. */
export function coreErrorClassOf(code: string): SluiceErrorClass | undefined {
  return CLASS_BY_CODE.get(code);
}
