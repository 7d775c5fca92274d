import type { MetricRegistry } from "../metric-registry.js";
import { ScopeVariables } from "../scope-format.js";
import { AbstractMetricGroup } from "./abstract-metric-group.js";
import { OperatorMetricGroup } from "./operator-metric-group.js";
import { TaskIOMetricGroup } from "./task-io-metric-group.js";
import type { TaskManagerJobMetricGroup } from "./task-manager-job-metric-group.js";

/** What identifies a task in its metrics (the scope variables of a task group). */
export interface TaskInfo {
  /** The job vertex (`<task_id>`). */
  readonly vertexId: string;
  /** The execution attempt (`<task_attempt_id>`). */
  readonly executionAttemptId: string;
  /** The vertex name (`<task_name>`). */
  readonly taskName: string;
  /** 0-based subtask index (`<subtask_index>`). */
  readonly subtaskIndex: number;
  /** The attempt number (`<task_attempt_num>`). */
  readonly attemptNumber: number;
}

/**
 * The group of one subtask's execution attempt (Flink's `TaskMetricGroup`): scope
 * `metrics.scope.task` (`<host>.taskmanager.<tm_id>.<job_name>.<task_name>.<subtask_index>`),
 * logical scope `taskmanager.job.task`. It carries the task's I/O metrics ({@link io}), the
 * shuffle's task metrics (registered by the plugin through the task's `ShuffleMetricSink`), and
 * operator groups a task's code adds. Closed when the task ends.
 */
export class TaskMetricGroup extends AbstractMetricGroup {
  /** The job vertex (`<task_id>`). */
  readonly vertexId: string;
  /** The execution attempt (`<task_attempt_id>`). */
  readonly executionAttemptId: string;
  /** The vertex name (`<task_name>`). */
  readonly taskName: string;
  /** 0-based subtask index. */
  readonly subtaskIndex: number;
  /** The task's records, idle, back-pressured and busy time. */
  readonly io: TaskIOMetricGroup;
  private readonly owner: TaskManagerJobMetricGroup;
  private readonly operators = new Map<string, OperatorMetricGroup>();

  constructor(registry: MetricRegistry, parent: TaskManagerJobMetricGroup, info: TaskInfo) {
    const variables = {
      [ScopeVariables.TASK_VERTEX_ID]: info.vertexId,
      [ScopeVariables.TASK_ATTEMPT_ID]: info.executionAttemptId,
      [ScopeVariables.TASK_NAME]: info.taskName,
      [ScopeVariables.TASK_SUBTASK_INDEX]: String(info.subtaskIndex),
      [ScopeVariables.TASK_ATTEMPT_NUM]: String(info.attemptNumber),
    };
    super(
      registry,
      registry.scopeFormats.task.formatScope({ ...parent.getAllVariables(), ...variables }),
      parent,
      variables,
    );
    this.owner = parent;
    this.vertexId = info.vertexId;
    this.executionAttemptId = info.executionAttemptId;
    this.taskName = info.taskName;
    this.subtaskIndex = info.subtaskIndex;
    this.io = new TaskIOMetricGroup(this);
  }

  protected get groupName(): string {
    return "task";
  }

  /** The group of an operator of this task (Flink's operator scope); `id` defaults to `name`. */
  addOperator(name: string, id = name): OperatorMetricGroup {
    let operator = this.operators.get(id);
    if (operator === undefined) {
      operator = new OperatorMetricGroup(this.registry, this, id, name);
      if (!this.isClosed()) this.operators.set(id, operator);
    }
    return operator;
  }

  /** Closes the group and its operators, and detaches it from its job (which closes with its last task). Idempotent. */
  override close(): void {
    if (this.isClosed()) return;
    super.close();
    for (const operator of this.operators.values()) operator.close();
    this.operators.clear();
    this.owner.removeTask(this);
  }
}
