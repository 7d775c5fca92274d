import type { MetricRegistry } from "../metric-registry.js";
import { ScopeVariables } from "../scope-format.js";
import { AbstractMetricGroup } from "./abstract-metric-group.js";
import type { TaskMetricGroup } from "./task-metric-group.js";

/**
 * The group of one operator within a task (Flink's `OperatorMetricGroup`): scope
 * `metrics.scope.operator`, logical scope `taskmanager.job.task.operator`, variables
 * `<operator_id>` and `<operator_name>`. A task's code adds one per step it wants to measure
 * separately (`task.metricGroup.addOperator("Tokenizer").counter("words")`).
 */
export class OperatorMetricGroup extends AbstractMetricGroup {
  /** The operator's id (`<operator_id>`). */
  readonly operatorId: string;
  /** The operator's name (`<operator_name>`). */
  readonly operatorName: string;

  constructor(
    registry: MetricRegistry,
    parent: TaskMetricGroup,
    operatorId: string,
    operatorName: string,
  ) {
    const variables = {
      [ScopeVariables.OPERATOR_ID]: operatorId,
      [ScopeVariables.OPERATOR_NAME]: operatorName,
    };
    super(
      registry,
      registry.scopeFormats.operator.formatScope({ ...parent.getAllVariables(), ...variables }),
      parent,
      variables,
    );
    this.operatorId = operatorId;
    this.operatorName = operatorName;
  }

  protected get groupName(): string {
    return "operator";
  }
}
