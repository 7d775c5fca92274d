import { ErrorCodes, SluiceError } from "@sluice/core";
import { readableConfigOf } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { JobManagerMetricGroup } from "./groups/job-manager-metric-group.js";
import { TaskManagerMetricGroup } from "./groups/task-manager-metric-group.js";
import { MetricRegistry } from "./metric-registry.js";
import { ScopeFormats } from "./scope-formats.js";

const TASK = {
  vertexId: "v-1",
  executionAttemptId: "attempt-1",
  taskName: "Count",
  subtaskIndex: 3,
  attemptNumber: 2,
};

describe("ScopeFormats", () => {
  it("builds scopes from metrics.scope.*, continuing the parent's format where it starts with *", async () => {
    const scopeFormats = ScopeFormats.fromConfiguration(
      readableConfigOf({
        "metrics.scope.tm": "workers.<tm_id>",
        "metrics.scope.tm-job": "*.<job_id>",
        "metrics.scope.task": "*.<task_name>.<subtask_index>.<task_attempt_num>.<no_such_var>",
      }),
    );
    const registry = new MetricRegistry({ scopeFormats, updateViewsAutomatically: false });
    const task = new TaskManagerMetricGroup(registry, "host-1", "tm-1")
      .addJob("job-1", "wc")
      .addTask(TASK);
    expect(task.getScopeComponents()).toEqual([
      "workers",
      "tm-1",
      "job-1",
      "Count",
      "3",
      "2",
      "<no_such_var>",
    ]);
    await registry.close();
  });

  it("reads Flink's deprecated metrics.scope.jm.job key and names the job manager's scopes", async () => {
    const scopeFormats = ScopeFormats.fromConfiguration(
      readableConfigOf({ "metrics.scope.jm.job": "<host>.jm.<job_name>" }),
    );
    const registry = new MetricRegistry({ scopeFormats, updateViewsAutomatically: false });
    const jobManager = new JobManagerMetricGroup(registry, "coordinator");
    const job = jobManager.addJob("job-1", "word count");
    expect(jobManager.getScopeComponents()).toEqual(["coordinator", "jobmanager"]);
    expect(job.getScopeComponents()).toEqual(["coordinator", "jm", "word count"]);
    expect(job.getLogicalScope()).toBe("jobmanager.job");
    expect(job.getAllVariables()).toEqual({
      "<host>": "coordinator",
      "<job_id>": "job-1",
      "<job_name>": "word count",
    });
    await registry.close();
  });

  it("rejects a root format that continues a parent it does not have", () => {
    let error: unknown;
    try {
      ScopeFormats.fromConfiguration(readableConfigOf({ "metrics.scope.tm": "*.tm" }));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe(ErrorCodes.CONFIG);
    expect((error as SluiceError).message).toContain("metrics.scope.tm");
  });
});
