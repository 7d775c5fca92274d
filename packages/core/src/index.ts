export * from "./deferred.js";
export * from "./describe-value.js";
export { reconstructError } from "./error-reconstruction.js";
export * from "./errors.js";
export * from "./event/index.js";
export * from "./ids/index.js";
export * from "./memory/index.js";
export * from "./partition-exception.js";
export * from "./serialization/index.js";
