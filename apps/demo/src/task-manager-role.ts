import { TaskManager } from "@sluice/cluster";
import { ConfigurationError, ErrorCodes, IllegalArgumentError } from "@sluice/core";
import { Configuration, describeThrowable, knownOptionsWith } from "@sluice/runtime";
import { serializeThrowable } from "@sluice/runtime/plugin";
import type { JsonValue } from "@sluice/runtime-api";
import { BATCH_SHUFFLE_MESSAGE, batchShuffleReportOf } from "./batch-mode.js";
import type { TaskManagerCommand } from "./cli.js";
import {
  METRIC_ENDPOINTS_MESSAGE,
  reporterEndpoints,
  THROTTLE_MESSAGE,
  ThrottleSchema,
} from "./control-messages.js";
import { APP_DIR, APP_VERSION, isUsageError, SHUFFLE_KEY } from "./demo-application.js";
import { Throttle } from "./throttle.js";
import { wordCountInvokables } from "./word-count-job.js";

/**
 * The demo's task manager role (`main.js taskmanager --jobmanager host:port`): a `TaskManager` of
 * @sluice/cluster with the word count's code. The job manager reads its metrics (records, bytes,
 * pools, back-pressure) with the control plane's metric query and sets the counters' throttle on
 * the application channel; the task manager tells it where its metric reporters serve once it
 * registered, and its peak RSS when it is shut down. It exits
 * when the job manager says the job ended (0, or 1 when the job failed), when it loses the job
 * manager (1), when its TaskExecutor fails fatally (1: a canceled task's code did not return within
 * `task.cancellation.timeout`), or on Ctrl-C / SIGTERM (130 / 143). Resolves with the exit code.
 */
export async function runTaskManager(
  command: TaskManagerCommand,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  const log = (line: string) => {
    if (!command.quiet) io.stdout.write(line);
  };
  const warn = (message: string) =>
    io.stderr.write(`warning: task manager (pid ${process.pid}): ${message}\n`);
  let interruptedBy: NodeJS.Signals | undefined;
  let taskManager: TaskManager | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    interruptedBy ??= signal;
    void taskManager?.close(`interrupted by ${signal}`);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const throttle = new Throttle();
  try {
    // Unknown keys are reported once the plugin, which may own some, is known (below).
    const configuration = Configuration.load({
      ...(command.configFile === undefined ? {} : { configFile: command.configFile }),
      args: command.dynamicProperties,
      warnUnknownKeys: false,
    });
    if (command.shuffle !== undefined) configuration.set(SHUFFLE_KEY, command.shuffle);
    taskManager = await TaskManager.start(configuration, {
      ...(command.jobManager === undefined ? {} : { jobManager: command.jobManager }),
      applicationVersion: APP_VERSION,
      invokables: wordCountInvokables(throttle),
      // `POST /jobs/:jobid/messages/throttle` on the job manager's REST endpoint (and its page).
      messages: {
        throttle: (payload) => {
          const parsed = ThrottleSchema.safeParse(payload);
          if (!parsed.success) {
            throw new IllegalArgumentError(
              `throttle expects {"recordsPerSecond": <a number of at least 1, or null to lift it>}, got ${JSON.stringify(payload)}`,
            );
          }
          throttle.set(parsed.data.recordsPerSecond ?? undefined);
          return { recordsPerSecond: parsed.data.recordsPerSecond };
        },
      },
      loader: { applicationDirs: [APP_DIR] },
      onApplicationMessage: async (name, payload) => {
        if (name === THROTTLE_MESSAGE) {
          throttle.set(ThrottleSchema.parse(payload).recordsPerSecond ?? undefined);
          return undefined;
        }
        if (name !== BATCH_SHUFFLE_MESSAGE || taskManager === undefined) {
          throw new ConfigurationError(
            `task manager (pid ${process.pid}) does not handle the message ${name}`,
          );
        }
        return batchShuffleReportOf(taskManager.executor) as unknown as JsonValue;
      },
      onShutdown: () => ({ peakRssMb: peakRssMb() }),
      onWarning: warn,
    });
    if (interruptedBy !== undefined) void taskManager.close(`interrupted by ${interruptedBy}`);
    // A local child (--quiet) has its job manager's sources, which the job manager checked.
    if (!command.quiet) {
      configuration.warnUnknownKeys(knownOptionsWith(taskManager.executor.plugin.configOptions));
    }
    const { executor } = taskManager;
    log(
      `task manager ${taskManager.index} (pid ${process.pid}) registered with the job manager at ${taskManager.jobManagerAddress}: data port ${executor.location.host}:${executor.location.dataPort}, resource ${executor.resourceId}\n`,
    );
    taskManager.notifyJobManager(METRIC_ENDPOINTS_MESSAGE, {
      endpoints: reporterEndpoints(executor.metricGroup.registry.reporters),
    } as unknown as JsonValue);
    const end = await taskManager.terminated;
    switch (end.reason) {
      case "shutdown":
        if (end.failed) log(`task manager ${process.pid}: the job failed: ${end.message}\n`);
        return end.failed ? 1 : 0;
      case "job-manager-lost":
        io.stderr.write(
          `error: task manager (pid ${process.pid}) lost the job manager: ${end.message}\n`,
        );
        return 1;
      case "closed":
        return interruptedBy === "SIGINT" ? 130 : 143;
      case "fatal-error":
        // The task's code may still run: the caller exits the process, as Flink's does.
        io.stderr.write(`error: task manager (pid ${process.pid}): ${end.message}\n`);
        return 1;
    }
  } catch (error) {
    io.stderr.write(
      `error: task manager (pid ${process.pid}): ${describeThrowable(serializeThrowable(error))}\n`,
    );
    if (interruptedBy !== undefined) return interruptedBy === "SIGINT" ? 130 : 143;
    return isConfigurationProblem(error) ? 2 : 1;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

/** A bad configuration or plugin, or a job manager that refused this task manager for one. */
function isConfigurationProblem(error: unknown): boolean {
  return isUsageError(error) || (error as { code?: unknown })?.code === ErrorCodes.PROTOCOL;
}
