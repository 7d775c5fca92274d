import { fileURLToPath } from "node:url";
import {
  Configuration,
  JobDeployer,
  type JobExecution,
  type JobResult,
  type ShuffleServiceLoaderOptions,
  TaskExecutor,
} from "@sluice/runtime";
import type { RuntimeContext } from "../functions.js";
import type { StreamExecutionEnvironment } from "../stream-execution-environment.js";

/** This package's folder: its devDependencies hold the plugins the tests load. */
export const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));

/** Where the tests' plugins are resolved from. */
export const LOADER: ShuffleServiceLoaderOptions = { applicationDirs: [PACKAGE_DIR] };

/** In-process channels, small memory, fast flushing; `extra` overrides. */
export function localConfiguration(extra: Record<string, unknown> = {}): Configuration {
  return new Configuration({
    "shuffle-service-factory.class": "@sluice/network#LocalShuffleServiceFactory",
    "taskmanager.memory.network.min": "8mb",
    "taskmanager.memory.segment-size": "4kb",
    "execution.buffer-timeout.interval": "5ms",
    ...extra,
  });
}

/** {@link localConfiguration} with checkpoints every `intervalMs` into `dir` and restarts. */
export function checkpointingConfiguration(
  dir: string,
  extra: Record<string, unknown> = {},
): Configuration {
  return localConfiguration({
    "state.checkpoints.dir": dir,
    "execution.checkpointing.interval": "30ms",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 5,
    "restart-strategy.fixed-delay.delay": "10ms",
    ...extra,
  });
}

/**
 * Runs `env`'s job as `execute` does, but lets the test watch its execution: the returned
 * `completedCheckpoints()` counts the checkpoints the running job completed so far.
 */
export function observedRun(
  env: StreamExecutionEnvironment,
  configuration: Configuration,
): { readonly result: Promise<JobResult>; completedCheckpoints(): number } {
  let execution: JobExecution | undefined;
  const result = (async () => {
    const executor = await TaskExecutor.start(configuration, {
      ...env.userCode,
      loader: LOADER,
    });
    const deployer = await JobDeployer.start(configuration, { loader: LOADER });
    try {
      execution = await deployer.deploy(env.createJobGraph(), () => executor, { configuration });
      return await execution.terminated;
    } finally {
      await deployer.close();
      await executor.close();
    }
  })();
  return {
    result,
    completedCheckpoints: () => execution?.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0,
  };
}

/**
 * A failure to inject: it throws once, in attempt `attempt` of subtask `subtask`, at the first
 * record after it processed `after` records and the job completed two checkpoints since that
 * attempt began, so that the restart restores a checkpoint rather than starting over.
 */
export function failOnceAfterCheckpoints(
  completedCheckpoints: () => number,
  attempt: number,
  subtask: number,
  after: number,
): (context: RuntimeContext) => void {
  let processed = 0;
  let completedAtStart: number | undefined;
  return (context) => {
    if (context.attemptNumber !== attempt || context.subtaskIndex !== subtask) return;
    completedAtStart ??= completedCheckpoints();
    processed++;
    if (processed >= after && completedCheckpoints() >= completedAtStart + 2) {
      processed = Number.NEGATIVE_INFINITY;
      throw new Error(`${context.taskName}: injected failure`);
    }
  };
}
