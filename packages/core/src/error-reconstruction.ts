import { coreErrorClassOf } from "./core-error-classes.js";
import {
  defineError,
  type ErrorCode,
  ErrorCodes,
  SluiceError,
  type SluiceErrorClass,
  type SluiceErrorOptions,
} from "./errors.js";
import type { ResultPartitionID } from "./ids/ids.js";
// Its classes register themselves for their codes: they must be loaded before any rebuild.
import type { PartitionErrorOptions } from "./partition-exception.js";
import "./partition-exception.js";

const KNOWN_CODES: ReadonlySet<string> = new Set(Object.values(ErrorCodes));
const ERROR_CLASS_NAME = /^[A-Za-z_$][\w$]{0,127}$/;
const MAX_CACHED_CLASSES = 64;
const classCache = new Map<string, SluiceErrorClass>();

/**
 * A class branded with the sender's class name, for codes whose class lives in another package
 * (e.g. runtime-api's DescriptorError): brands compare by name, so `instanceof` that class holds.
 * The cache is bounded because names come from another process.
 */
function brandedClass(name: string, code: ErrorCode): SluiceErrorClass {
  const key = `${code} ${name}`;
  let cls = classCache.get(key);
  if (cls === undefined) {
    cls = defineError(name, code);
    if (classCache.size < MAX_CACHED_CLASSES) classCache.set(key, cls);
  }
  return cls;
}

function isGenericName(name: string): boolean {
  return name === "" || name === "Error" || name === "SluiceError";
}

/**
 * Rebuilds an error that another process reported as code, class name and message (an
 * ErrorResponse on the wire, a failed task's state report). A code with a class in this package
 * yields that class (the sender's name is prefixed to the message when it differs); a code whose
 * class lives elsewhere yields a class branded with the sender's name, so `instanceof` the real
 * class works; a code this build does not know (a newer peer), `SLUICE_ERR_UNKNOWN` or no code at
 * all yields a plain SluiceError with code `SLUICE_ERR_UNKNOWN` whose message names the original
 * error. `details.partitionId`, when the sender's error named a partition, is given to the
 * classes of the PartitionException family, so `isPartitionException` holds on this side too.
 */
export function reconstructError(
  code: string | undefined,
  name: string,
  message: string,
  details?: { readonly partitionId?: ResultPartitionID },
): SluiceError {
  if (code === undefined || !KNOWN_CODES.has(code)) {
    const unknown = code === undefined ? "" : ` (unknown error code ${code})`;
    return new SluiceError(
      ErrorCodes.UNKNOWN,
      isGenericName(name) && unknown === "" ? message : `${name || "Error"}${unknown}: ${message}`,
    );
  }
  if (code === ErrorCodes.UNKNOWN) {
    return new SluiceError(
      ErrorCodes.UNKNOWN,
      isGenericName(name) ? message : `${name}: ${message}`,
    );
  }
  const cls = coreErrorClassOf(code);
  if (cls !== undefined) {
    const sameName = name === cls.name || isGenericName(name);
    // Only the PartitionException family reads `partitionId`; the other classes ignore it.
    const options: PartitionErrorOptions | undefined =
      details?.partitionId === undefined ? undefined : { partitionId: details.partitionId };
    return new cls(sameName ? message : `${name}: ${message}`, options as SluiceErrorOptions);
  }
  if (ERROR_CLASS_NAME.test(name) && !isGenericName(name)) {
    return new (brandedClass(name, code as ErrorCode))(message);
  }
  return new SluiceError(code as ErrorCode, message);
}
