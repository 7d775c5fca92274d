import { existsSync } from "node:fs";
import path from "node:path";
import { type ConfigOption, ConfigOptions, readableConfigOf } from "@sluice/runtime-api";
import { PluginNotFoundError } from "../loader/errors.js";
import { parseFactoryReference } from "../loader/factory-reference.js";
import {
  type LoadedPlugin,
  loadPlugin,
  type PluginKind,
  type PluginLoaderOptions,
} from "../loader/plugin-loader.js";
import type { UserCodeNames } from "../messages/user-code-names.js";
import type { Task } from "./task.js";
import { type UserCode, UserCodeRegistry } from "./user-code-registry.js";

/** What a TaskExecutor needs of a job module (the runtime's `JobModule`): its tasks' code. */
export interface UserCodeModule {
  /** The code the job's tasks run, by the names its job graph uses. */
  readonly userCode: UserCode<Task>;
}

/** The descriptor field that names a job module, as the loader reports it. */
const USER_CODE_MODULE: ConfigOption<string | undefined> = ConfigOptions.key("userCodeModule")
  .stringType()
  .noDefaultValue()
  .withDescription("The job module (`<module>#<export>`) whose user code a job's tasks run.");

const USER_CODE_MODULE_KIND: PluginKind<UserCodeModule> = {
  name: "JobModule",
  option: USER_CODE_MODULE,
  description: "a job module reference, <module>#<export>",
  aliases: {},
  brandKey: "@sluice/runtime/JobModule",
  isFactory: (value): value is UserCodeModule =>
    typeof (value as { userCode?: unknown } | null)?.userCode === "object" &&
    (value as { userCode?: unknown }).userCode !== null,
  missingMembers: () => ["userCode"],
};

/**
 * The user code of the jobs a TaskExecutor runs, by job module (Flink's `LibraryCacheManager`,
 * with ES modules where Flink has a class loader per job). A job's tasks name their job module
 * (`<module>#<export>`); it is loaded from this host the first time a task of it is deployed
 * (resolved like a plugin; a relative path from each of the application folders, Flink's
 * `usrlib/`, in turn, then from the working directory) and kept for later tasks and jobs. A module that fails to load is
 * not kept, so that a deployment after the module was installed succeeds. Node caches an ES
 * module for the life of the process, so a changed module is only seen under a new name or by
 * a restarted task manager.
 */
export class LibraryCacheManager {
  private readonly loaded = new Map<string, Promise<UserCodeRegistry<Task>>>();

  constructor(private readonly loaderOptions: PluginLoaderOptions) {}

  /**
   * The user code of job module `reference`, loaded once.
   *
   * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`), naming the module, where it was looked
   *   for and what was found instead.
   */
  registryOf(reference: string): Promise<UserCodeRegistry<Task>> {
    let registry = this.loaded.get(reference);
    if (registry === undefined) {
      registry = this.load(reference).then(({ factory }) => new UserCodeRegistry(factory.userCode));
      this.loaded.set(reference, registry);
      registry.catch(() => this.loaded.delete(reference));
    }
    return registry;
  }

  /**
   * Loads the module: a package name from the application folders (then the working directory),
   * a relative path from the first of the application folders, then the working directory, that
   * has it.
   */
  private async load(reference: string): Promise<LoadedPlugin<UserCodeModule>> {
    const configuration = readableConfigOf({ [USER_CODE_MODULE.key]: reference });
    const options = this.loaderOptions;
    if (parseFactoryReference(reference, USER_CODE_MODULE.key, {}).kind !== "relative") {
      return loadPlugin(configuration, USER_CODE_MODULE_KIND, options);
    }
    const { specifier } = parseFactoryReference(reference, USER_CODE_MODULE.key, {});
    const bases = [
      ...(options.applicationDirs ?? []),
      options.configDir ?? options.cwd ?? process.cwd(),
    ].map((folder) => path.resolve(folder));
    const base = bases.find((folder) => existsSync(path.resolve(folder, specifier)));
    if (base === undefined) {
      throw new PluginNotFoundError(
        `${USER_CODE_MODULE.key} = ${JSON.stringify(reference)}: no ${specifier} in the task manager's folders of user code (${[...new Set(bases)].map((folder) => path.resolve(folder, specifier)).join(", ")} do not exist); install the job module there, or name it by a package the task manager has`,
      );
    }
    return loadPlugin(configuration, USER_CODE_MODULE_KIND, {
      ...options,
      cwd: base,
      configDir: base,
    });
  }

  /**
   * The names job module `reference` registers (loading it if needed), for the job side to check
   * a job graph against before it deploys.
   *
   * @throws as {@link registryOf}.
   */
  async namesOf(reference: string): Promise<UserCodeNames> {
    return (await this.registryOf(reference)).names();
  }
}
