import type { Configuration } from "../config/configuration.js";
import type { Task } from "../taskexecutor/task.js";
import type { UserCode } from "../taskexecutor/user-code-registry.js";
import type { JobGraph } from "./job-graph.js";

/** What a {@link JobModule} builds its job graph from. */
export interface JobModuleContext {
  /** The arguments given after the module (e.g. on the `sluice run` command line). */
  readonly args: readonly string[];
  /** The configuration the job is submitted with. */
  readonly configuration: Configuration;
}

/**
 * A job packaged as an ES module (Flink's packaged program: the user jar with its entry class).
 * The same module is loaded twice, by module reference (`<module>#<export>`, resolved like a
 * shuffle plugin): where the job is submitted, to build its {@link JobGraph}, and on every task
 * manager, to run its tasks with {@link userCode}. Both loads must therefore agree on the names
 * the graph uses for invokables, serializers, key selectors and partitioners.
 */
export interface JobModule {
  /** The job's name, when the graph does not give one (for listings and messages). */
  readonly name?: string;
  /** The code the job's tasks run, by the names its job graph uses. */
  readonly userCode: UserCode<Task>;
  /** Builds the job graph; called once per submission, where the job is submitted. */
  createJobGraph(context: JobModuleContext): JobGraph | Promise<JobGraph>;
}

/**
 * Declares a job module; returns `module` unchanged (for its types).
 *
 * @example
 * ```ts
 * export default defineJob({
 *   userCode: { invokables: { produce, consume } },
 *   createJobGraph: () => graph,
 * });
 * ```
 */
export function defineJob(module: JobModule): JobModule {
  return module;
}

/** True when `value` has a `createJobGraph` method and a `userCode` object: a {@link JobModule}. */
export function isJobModule(value: unknown): value is JobModule {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { createJobGraph?: unknown }).createJobGraph === "function" &&
    typeof (value as { userCode?: unknown }).userCode === "object" &&
    (value as { userCode?: unknown }).userCode !== null
  );
}
