import { type ConfigOption, ConfigOptions, readableConfigOf } from "@sluice/runtime-api";
import type { Configuration } from "../config/configuration.js";
import { loadPlugin, type PluginKind, type PluginLoaderOptions } from "../loader/plugin-loader.js";
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

/** A job module loaded by reference, and where it came from. */
export interface LoadedJobModule {
  readonly module: JobModule;
  /** The module file imported. */
  readonly file: string;
  /** The export used (`default` for the default export). */
  readonly exportName: string;
}

/** The name a job module reference is reported under, as a configuration key would be. */
const JOB_MODULE_OPTION: ConfigOption<string | undefined> = ConfigOptions.key("job module")
  .stringType()
  .noDefaultValue()
  .withDescription("A job module reference, `<module>#<export>`.");

const JOB_MODULE_KIND: PluginKind<JobModule> = {
  name: "JobModule",
  option: JOB_MODULE_OPTION,
  description: "a job module reference, <module>#<export>",
  aliases: {},
  brandKey: "@sluice/runtime/JobModule",
  isFactory: isJobModule,
  missingMembers: (value) =>
    ["createJobGraph", "userCode"].filter(
      (member) => (value as Record<string, unknown> | null)?.[member] === undefined,
    ),
};

/**
 * Loads the job module `reference` names (`<module>#<export>`; no `#`: the default export),
 * resolved as plugins are: a path relative to the working directory (or `options.cwd`), an
 * absolute path or `file:` URL, or a package name from the working directory's `node_modules`.
 *
 * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`), naming the module, where it was looked for
 *   and what was found instead (an export that is no job module names the members it lacks).
 */
export async function loadJobModule(
  reference: string,
  options: PluginLoaderOptions = {},
): Promise<LoadedJobModule> {
  const loaded = await loadPlugin(
    readableConfigOf({ [JOB_MODULE_OPTION.key]: reference }),
    JOB_MODULE_KIND,
    options,
  );
  return { module: loaded.factory, file: loaded.file, exportName: loaded.exportName };
}
