import { defineError, ErrorCodes } from "@sluice/core";

/**
 * The conformance kit could not find the worker script it forks for every worker process
 * (`dist/worker/worker.js` of `@sluice/shuffle-tck`): the package was not built, when running from
 * a checkout's sources, or its installed copy lacks the file. The message names the kit's module
 * and the path it looked for. Code: `SLUICE_ERR_TCK_WORKER_NOT_FOUND`.
 */
export const ConformanceWorkerNotFoundError = defineError(
  "ConformanceWorkerNotFoundError",
  ErrorCodes.TCK_WORKER_NOT_FOUND,
);
export type ConformanceWorkerNotFoundError = InstanceType<typeof ConformanceWorkerNotFoundError>;
