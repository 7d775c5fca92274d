/**
 * The checkpoint plan per subtask (Flink's DefaultCheckpointPlanCalculatorTest): declared
 * vertices, edges and finished subtasks, and the tasks the plan must trigger, wait for, notify
 * and record as finished.
 */
import { ResourceID } from "@sluice/core";
import { must } from "@sluice/core/testing";
import type { ExecutionState } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import type { TaskExecutorGateway } from "../../messages/task-executor-gateway.js";
import { ExecutionGraph } from "../execution-graph.js";
import type { ExecutionVertex } from "../execution-vertex.js";
import { type DistributionPattern, JobGraph } from "../job-graph.js";
import { calculateCheckpointPlan } from "./checkpoint-plan-calculator.js";

/** A vertex: its parallelism and the subtasks that finished. */
interface VertexDeclaration {
  readonly parallelism: number;
  readonly finished: readonly number[];
}

/** An edge from vertex `source` to vertex `target` (indexes into the declarations). */
interface EdgeDeclaration {
  readonly source: number;
  readonly target: number;
  readonly pattern: DistributionPattern;
}

/** Subtasks of one vertex. */
type TaskDeclaration = readonly [vertex: number, subtasks: readonly number[]];

const range = (start: number, end: number) =>
  Array.from({ length: end - start }, (_, i) => start + i);

/** A gateway that can be triggered; nothing is ever sent through it here. */
const GATEWAY: TaskExecutorGateway = {
  location: { resourceId: new ResourceID(), host: "127.0.0.1", dataPort: -1 },
  submitTask: async () => {},
  cancelTask: async () => {},
  updatePartitions: async () => {},
  releasePartitions: async () => {},
  triggerCheckpoint: async () => {},
};

async function executionGraph(
  vertices: readonly VertexDeclaration[],
  edges: readonly EdgeDeclaration[],
  states: (declaration: VertexDeclaration, subtask: number) => ExecutionState = (d, i) =>
    d.finished.includes(i) ? "FINISHED" : "RUNNING",
): Promise<{ graph: JobGraph; executions: ExecutionGraph }> {
  const graph = new JobGraph("plan");
  const jobVertices = vertices.map((vertex, i) =>
    graph.addVertex({ name: `vertex_${i}`, parallelism: vertex.parallelism }),
  );
  for (const edge of edges) {
    graph.connect(must(jobVertices[edge.source]), must(jobVertices[edge.target]), {
      partitioner: { name: edge.pattern === "POINTWISE" ? "RESCALE" : "REBALANCE" },
      serializer: "string",
      distributionPattern: edge.pattern,
    });
  }
  const executions = new ExecutionGraph(graph);
  await executions.placeExecutions(
    async () => GATEWAY,
    () => false,
  );
  vertices.forEach((declaration, v) => {
    for (const execution of executions.subtasksOf(must(jobVertices[v]))) {
      execution.state = states(declaration, execution.subtaskIndex);
    }
  });
  return { graph, executions };
}

/** The names of the subtasks `declarations` name, sorted. */
function names(declarations: readonly TaskDeclaration[]): string[] {
  return declarations
    .flatMap(([vertex, subtasks]) => subtasks.map((i) => `vertex_${vertex}#${i}`))
    .sort();
}

const nameOf = (execution: ExecutionVertex) => `${execution.vertex.name}#${execution.subtaskIndex}`;

/**
 * Computes the plan and checks it: the subtasks to trigger are `toTrigger`; the running ones
 * (every subtask not declared finished) are waited for and notified; the finished ones are
 * recorded.
 */
async function runSingleTest(
  vertices: readonly VertexDeclaration[],
  edges: readonly EdgeDeclaration[],
  toTrigger: readonly TaskDeclaration[],
): Promise<void> {
  const { graph, executions } = await executionGraph(vertices, edges);
  const plan = calculateCheckpointPlan(graph, "RUNNING", executions.executionVertices, true);
  if (typeof plan === "string") throw new Error(`no plan: ${plan}`);
  const byAttempt = new Map(executions.executionVertices.map((e) => [e.attemptId.toString(), e]));
  const named = (attempts: readonly { executionAttemptId: { toString(): string } }[]) =>
    attempts
      .map((task) => nameOf(byAttempt.get(task.executionAttemptId.toString()) as ExecutionVertex))
      .sort();
  const running = vertices.map(
    (v, i) => [i, range(0, v.parallelism).filter((s) => !v.finished.includes(s))] as const,
  );
  const finished = vertices.map((v, i) => [i, v.finished] as const);
  expect(named(plan.tasksToTrigger), "the tasks to trigger").toEqual(names(toTrigger));
  expect(named(plan.tasksToWaitFor), "the tasks to wait for").toEqual(names(running));
  expect(named(plan.tasksToCommitTo ?? []), "the tasks to commit to").toEqual(names(running));
  expect(named(plan.finishedTasks ?? []), "the finished tasks").toEqual(names(finished));
}

const vertex = (parallelism: number, finished: readonly number[] = []): VertexDeclaration => ({
  parallelism,
  finished,
});
const edge = (source: number, target: number, pattern: DistributionPattern): EdgeDeclaration => ({
  source,
  target,
  pattern,
});

describe("the checkpoint plan per subtask (DefaultCheckpointPlanCalculator)", () => {
  it("testComputeAllRunningGraph: with every task running, the sources are triggered and every task waited for", async () => {
    await runSingleTest(
      [vertex(3), vertex(4), vertex(5), vertex(6)],
      [edge(0, 2, "ALL_TO_ALL"), edge(1, 2, "POINTWISE"), edge(2, 3, "ALL_TO_ALL")],
      [
        [0, range(0, 3)],
        [1, range(0, 4)],
      ],
    );
  });

  it("testAllToAllEdgeWithSomeSourcesFinished: an ALL_TO_ALL consumer of a partly finished source is not triggered", async () => {
    await runSingleTest(
      [vertex(3, range(0, 2)), vertex(4)],
      [edge(0, 1, "ALL_TO_ALL")],
      [[0, range(2, 3)]],
    );
  });

  it("testOneToOneEdgeWithSomeSourcesFinished: a POINTWISE consumer whose own producer finished is triggered", async () => {
    await runSingleTest(
      [vertex(4, range(0, 2)), vertex(4)],
      [edge(0, 1, "POINTWISE")],
      [
        [0, range(2, 4)],
        [1, range(0, 2)],
      ],
    );
  });

  it("testOneToOnEdgeWithSomeSourcesAndTargetsFinished: finished consumers are recorded, the running ones whose producer finished triggered", async () => {
    await runSingleTest(
      [vertex(4, range(0, 2)), vertex(4, [0])],
      [edge(0, 1, "POINTWISE")],
      [
        [0, range(2, 4)],
        [1, range(1, 2)],
      ],
    );
  });

  it("testComputeWithMultipleInputs: a subtask is triggered only when every input, ALL_TO_ALL and POINTWISE, finished for it", async () => {
    await runSingleTest(
      [vertex(3, range(0, 3)), vertex(5, [0, 2, 3]), vertex(5, [2, 4]), vertex(5, [2])],
      [edge(0, 3, "ALL_TO_ALL"), edge(1, 3, "POINTWISE"), edge(2, 3, "POINTWISE")],
      [
        [1, [1, 4]],
        [2, [0, 1, 3]],
      ],
    );
  });

  it("testComputeWithMultipleLevels: the plan follows finished subtasks through several levels", async () => {
    await runSingleTest(
      [
        vertex(16, range(0, 4)),
        vertex(16, range(0, 16)),
        vertex(16, range(0, 2)),
        vertex(16),
        vertex(16),
      ],
      [
        edge(0, 2, "POINTWISE"),
        edge(0, 3, "POINTWISE"),
        edge(1, 2, "ALL_TO_ALL"),
        edge(1, 3, "POINTWISE"),
        edge(2, 4, "POINTWISE"),
        edge(3, 4, "ALL_TO_ALL"),
      ],
      [
        [0, range(4, 16)],
        [2, range(2, 4)],
        [3, range(0, 4)],
      ],
    );
  });

  it("testPlanCalculationWhenOneTaskNotRunning: no plan while a subtask is neither RUNNING nor FINISHED, sources or not", async () => {
    const notRunning: ExecutionState[] = [
      "CREATED",
      "SCHEDULED",
      "DEPLOYING",
      "INITIALIZING",
      "CANCELING",
      "CANCELED",
      "FAILED",
    ];
    for (const [runningIsSource, notRunningIsSource] of [
      [true, true],
      [true, false],
      [false, false],
      [false, true],
    ]) {
      for (const state of notRunning) {
        // Vertex 0 runs, vertex 1 does not; a vertex that is no source reads vertex 2 (running).
        const vertices = [vertex(1), vertex(1), vertex(1)];
        const edges = [
          ...(runningIsSource ? [] : [edge(2, 0, "ALL_TO_ALL" as const)]),
          ...(notRunningIsSource ? [] : [edge(2, 1, "ALL_TO_ALL" as const)]),
        ];
        const { graph, executions } = await executionGraph(vertices, edges, (d) =>
          d === vertices[1] ? state : "RUNNING",
        );
        const plan = calculateCheckpointPlan(graph, "RUNNING", executions.executionVertices, true);
        expect(plan, `a subtask ${state}`).toBe(`vertex_1 (1/1)#0 is ${state}`);
      }
    }
  });

  it("refuses a plan once a subtask finished when checkpoints after tasks finish are off", async () => {
    const { graph, executions } = await executionGraph(
      [vertex(2, [0]), vertex(2)],
      [edge(0, 1, "POINTWISE")],
    );
    const plan = calculateCheckpointPlan(graph, "RUNNING", executions.executionVertices, false);
    expect(plan).toBe("vertex_0 (1/2)#0 is FINISHED");
  });

  it("triggers a RESCALE consumer only once every producer it reads finished, at unequal parallelism", async () => {
    // 4 → 2 RESCALE: consumer 0 reads producers 0 and 1, consumer 1 reads 2 and 3.
    await runSingleTest(
      [vertex(4, [0, 2, 3]), vertex(2)],
      [edge(0, 1, "POINTWISE")],
      [
        [0, [1]],
        [1, [1]],
      ],
    );
    // 2 → 4 RESCALE: producer 0 feeds consumers 0 and 1.
    await runSingleTest(
      [vertex(2, [0]), vertex(4)],
      [edge(0, 1, "POINTWISE")],
      [
        [0, [1]],
        [1, [0, 1]],
      ],
    );
  });

  it("has no plan once every subtask finished, or while the job is not RUNNING", async () => {
    const { graph, executions } = await executionGraph(
      [vertex(1, [0]), vertex(1, [0])],
      [edge(0, 1, "POINTWISE")],
    );
    expect(calculateCheckpointPlan(graph, "RUNNING", executions.executionVertices, true)).toBe(
      "every task of job plan finished",
    );
    const running = await executionGraph([vertex(1)], []);
    expect(
      calculateCheckpointPlan(
        running.graph,
        "RESTARTING",
        running.executions.executionVertices,
        true,
      ),
    ).toBe("job plan is RESTARTING");
  });
});
