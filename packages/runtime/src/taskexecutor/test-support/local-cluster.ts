import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { Configuration } from "../../config/configuration.js";
import { JobDeployer } from "../../jobmaster/job-deployer.js";
import { TaskExecutor, type TaskExecutorOptions } from "../task-executor.js";

/**
 * This package's folder: its package.json lists `@sluice/network` (a devDependency), whose local
 * factory runs every channel in process. The plugins over TCP and WebSocket run the same path in
 * the conformance suite, across processes.
 */
const APPLICATION_DIR = fileURLToPath(new URL("../../..", import.meta.url));

/** Small memory, fast flushing, the local plugin. */
const LOCAL_CONFIG = {
  "shuffle-service-factory.class": "@sluice/network#LocalShuffleServiceFactory",
  "taskmanager.memory.network.min": "4mb",
  "taskmanager.memory.segment-size": "4kb",
  "execution.buffer-timeout.interval": "5ms",
};

/** A configuration for the runtime's tests: the local plugin plus `extra`. */
export function localConfiguration(extra: Record<string, unknown> = {}): Configuration {
  return new Configuration({ ...LOCAL_CONFIG, ...extra });
}

/**
 * A {@link localConfiguration} that checkpoints every 50 ms into `checkpointsDir` and restarts a
 * failed job up to `restartAttempts` times, 10 ms apart; `extra` overrides any of it.
 */
export function checkpointingConfiguration(
  checkpointsDir: string,
  restartAttempts: number,
  extra: Record<string, unknown> = {},
): Configuration {
  return localConfiguration({
    "state.checkpoints.dir": checkpointsDir,
    "execution.checkpointing.interval": "50ms",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": restartAttempts,
    "restart-strategy.fixed-delay.delay": "10ms",
    ...extra,
  });
}

/**
 * TaskExecutors and JobDeployers of the local plugin for the runtime's own tests; {@link close}
 * shuts them down and checks that every network buffer is back in its pool.
 */
export class LocalCluster {
  private readonly executors: TaskExecutor[] = [];
  private readonly deployers: JobDeployer[] = [];

  /** Starts a TaskExecutor of the local plugin. */
  async startExecutor(
    config = localConfiguration(),
    options: TaskExecutorOptions = {},
  ): Promise<TaskExecutor> {
    const executor = await TaskExecutor.start(config, {
      ...options,
      loader: { applicationDirs: [APPLICATION_DIR] },
    });
    this.executors.push(executor);
    return executor;
  }

  /** Starts a JobDeployer (with the local plugin's master). */
  async startDeployer(config = localConfiguration()): Promise<JobDeployer> {
    const deployer = await JobDeployer.start(config, {
      loader: { applicationDirs: [APPLICATION_DIR] },
    });
    this.deployers.push(deployer);
    return deployer;
  }

  /** Closes everything; every executor's network buffers must be back in its pool. */
  async close(): Promise<void> {
    for (const deployer of this.deployers.splice(0)) await deployer.close();
    for (const executor of this.executors.splice(0)) {
      await executor.close();
      const [available, total] = segments(executor);
      expect(available, "network buffers back in the pool after close").toBe(total);
    }
  }
}

/** The segments of an executor's NetworkBufferPool: [available, total]. */
export function segments(executor: TaskExecutor): [number, number] {
  const pool = (
    executor.shuffleEnvironment as unknown as {
      networkBufferPool: {
        getNumberOfAvailableMemorySegments(): number;
        totalNumberOfMemorySegments: number;
      };
    }
  ).networkBufferPool;
  return [pool.getNumberOfAvailableMemorySegments(), pool.totalNumberOfMemorySegments];
}
