import { ConfigurationError } from "@sluice/core";

/** Separates the components of a scope format and of a metric identifier. */
export const SCOPE_SEPARATOR = ".";

/** A leading `*` stands for the parent component's format (Flink's `SCOPE_INHERIT_PARENT`). */
export const SCOPE_INHERIT_PARENT = "*";

/** The scope variables (Flink's `ScopeFormat.SCOPE_*`), in angle brackets as formats write them. */
export const ScopeVariables = {
  HOST: "<host>",
  TASKMANAGER_ID: "<tm_id>",
  JOB_ID: "<job_id>",
  JOB_NAME: "<job_name>",
  TASK_VERTEX_ID: "<task_id>",
  TASK_NAME: "<task_name>",
  TASK_ATTEMPT_ID: "<task_attempt_id>",
  TASK_ATTEMPT_NUM: "<task_attempt_num>",
  TASK_SUBTASK_INDEX: "<subtask_index>",
  OPERATOR_ID: "<operator_id>",
  OPERATOR_NAME: "<operator_name>",
} as const;

function isVariable(component: string): boolean {
  return component.length >= 3 && component.startsWith("<") && component.endsWith(">");
}

/**
 * How the scope of one kind of component group is built (Flink's `ScopeFormat`): a format such as
 * `<host>.taskmanager.<tm_id>` is split at `.`, and every component that is a variable is replaced
 * by its value (a variable the group does not have stays as written). A format that starts with
 * `*` continues its parent's format (`*.<job_name>` under a task manager).
 */
export class ScopeFormat {
  /** The format as configured (without the inherited part). */
  readonly format: string;
  private readonly template: readonly string[];

  /**
   * @param key the config key, for messages.
   * @throws ConfigurationError when the format starts with `*` but the component has no parent.
   */
  constructor(format: string, parent: ScopeFormat | undefined, key: string) {
    const components = format.split(SCOPE_SEPARATOR);
    if (components[0] === SCOPE_INHERIT_PARENT) {
      if (parent === undefined) {
        throw new ConfigurationError(
          `Invalid value for config key "${key}": ${JSON.stringify(format)} starts with "*" (the parent's format), but this component has no parent`,
        );
      }
      this.template = [...parent.template, ...components.slice(1)];
      this.format = format.length > 2 ? format.slice(2) : "<empty>";
    } else {
      this.template = format === "" ? [] : components;
      this.format = format === "" ? "<empty>" : format;
    }
  }

  /**
   * The scope components with `values` (keyed `<name>`) filled in. An empty value becomes `null`,
   * as in Flink.
   */
  formatScope(values: Readonly<Record<string, string>>): string[] {
    return this.template.map((component) => {
      if (!isVariable(component) || !Object.hasOwn(values, component)) return component;
      const value = values[component] as string;
      return value === "" ? "null" : value;
    });
  }

  /** `ScopeFormat '<format>'`, for messages. */
  toString(): string {
    return `ScopeFormat '${this.format}'`;
  }
}
