export * from "./checkpointing/index.js";
export * from "./config/index.js";
export * from "./io/index.js";
export * from "./jobmaster/index.js";
export * from "./loader/index.js";
export * from "./metrics/index.js";
export * from "./partitioner/index.js";
export * from "./taskexecutor/index.js";
