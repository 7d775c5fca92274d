import { ExecutionAttemptID, JobID } from "@sluice/core";
import { describe, expect, it } from "vitest";
import { TaskDeploymentDescriptorCodec } from "./task-deployment-descriptor.js";

/** A descriptor of a task without partitions or gates, as JSON. */
function descriptorJson(extra: Record<string, unknown>) {
  return {
    version: 1,
    jobId: new JobID().toString(),
    executionAttemptId: new ExecutionAttemptID().toString(),
    taskName: "Sink",
    numberOfSubtasks: 1,
    producedPartitions: [],
    inputGates: [],
    taskConfiguration: {},
    checkpointingMode: "EXACTLY_ONCE",
    ...extra,
  };
}

describe("TaskDeploymentDescriptorCodec, FLIP-147 fields", () => {
  it("carries checkpointsAfterTasksFinish and a restore of a finished subtask through JSON", () => {
    const json = descriptorJson({
      checkpointsAfterTasksFinish: true,
      taskRestore: { checkpointId: "12", finished: true },
    });
    const descriptor = TaskDeploymentDescriptorCodec.fromJSON(json);
    expect(descriptor.checkpointsAfterTasksFinish).toBe(true);
    expect(descriptor.taskRestore).toEqual({ checkpointId: 12n, finished: true });
    expect(TaskDeploymentDescriptorCodec.toJSON(descriptor)).toMatchObject({
      checkpointsAfterTasksFinish: true,
      taskRestore: { checkpointId: "12", finished: true },
    });
  });

  it("leaves both out when false, and refuses a finished flag that is not a boolean", () => {
    const plain = TaskDeploymentDescriptorCodec.fromJSON(
      descriptorJson({ taskRestore: { checkpointId: "3" } }),
    );
    expect(plain.checkpointsAfterTasksFinish).toBeUndefined();
    expect(plain.taskRestore).toEqual({ checkpointId: 3n });
    expect(TaskDeploymentDescriptorCodec.toJSON(plain)).not.toHaveProperty(
      "checkpointsAfterTasksFinish",
    );
    expect(() =>
      TaskDeploymentDescriptorCodec.fromJSON(
        descriptorJson({ taskRestore: { checkpointId: "3", finished: "yes" } }),
      ),
    ).toThrow(/finished/);
  });
});

describe("TaskDeploymentDescriptorCodec, the leadership epoch", () => {
  it("carries the leadership epoch through JSON and refuses one that cannot be part of a name, naming the field", () => {
    const descriptor = TaskDeploymentDescriptorCodec.fromJSON(
      descriptorJson({ leadershipEpoch: "1234" }),
    );
    expect(descriptor.leadershipEpoch).toBe("1234");
    expect(TaskDeploymentDescriptorCodec.toJSON(descriptor)).toMatchObject({
      leadershipEpoch: "1234",
    });
    expect(TaskDeploymentDescriptorCodec.fromJSON(descriptorJson({})).leadershipEpoch).toBe(
      undefined,
    );
    for (const bad of ["", "a-b", "../x", "x".repeat(33), 7]) {
      expect(() =>
        TaskDeploymentDescriptorCodec.fromJSON(descriptorJson({ leadershipEpoch: bad })),
      ).toThrow(
        expect.objectContaining({
          code: "SLUICE_ERR_DESCRIPTOR",
          message: expect.stringContaining("leadershipEpoch"),
        }),
      );
    }
  });
});

describe("TaskDeploymentDescriptorCodec, the vertex's max parallelism", () => {
  it("carries maxParallelism through JSON and leaves it out when absent", () => {
    const descriptor = TaskDeploymentDescriptorCodec.fromJSON(
      descriptorJson({ numberOfSubtasks: 3, maxParallelism: 10 }),
    );
    expect(descriptor.maxParallelism).toBe(10);
    expect(TaskDeploymentDescriptorCodec.toJSON(descriptor)).toMatchObject({ maxParallelism: 10 });
    const plain = TaskDeploymentDescriptorCodec.fromJSON(descriptorJson({}));
    expect(plain.maxParallelism).toBeUndefined();
    expect(TaskDeploymentDescriptorCodec.toJSON(plain)).not.toHaveProperty("maxParallelism");
  });

  it("refuses a maxParallelism below the number of subtasks", () => {
    expect(() =>
      TaskDeploymentDescriptorCodec.fromJSON(
        descriptorJson({ numberOfSubtasks: 3, maxParallelism: 2 }),
      ),
    ).toThrow(/maxParallelism/);
  });
});
