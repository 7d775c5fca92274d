import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { TaskDeploymentError } from "../taskexecutor/errors.js";
import { LocalCluster } from "../taskexecutor/test-support/local-cluster.js";
import { JobGraph } from "./job-graph.js";
import { checkUserCode, userCodeNamesNeeded } from "./user-code-check.js";

/** A job graph that needs an invokable per vertex, a user serializer and a user key selector. */
function keyedGraph(): JobGraph {
  const graph = new JobGraph("keyed");
  const source = graph.addVertex({ name: "Source", parallelism: 1, invokable: "source" });
  const count = graph.addVertex({ name: "Count", parallelism: 2, invokable: "count" });
  graph.connect(source, count, {
    partitioner: { name: "HASH", keySelector: "word" },
    serializer: "clicks",
  });
  return graph;
}

const folders: string[] = [];
const cluster = new LocalCluster();
afterEach(async () => {
  await cluster.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe("checking a job's user code on its TaskExecutors before deploying", () => {
  it("needs the graph's invokables and its non-built-in serializers and key selectors", () => {
    expect(userCodeNamesNeeded(keyedGraph())).toEqual({
      invokables: ["count", "source"],
      serializers: ["clicks"],
      keySelectors: ["word"],
      partitioners: [],
    });
  });

  it("names each TaskExecutor that lacks a name, and what it registers", async () => {
    const complete = await cluster.startExecutor(undefined, {
      invokables: { source: () => undefined, count: () => undefined },
      serializers: { clicks: { name: "clicks" } as never },
      keySelectors: { word: (record: unknown) => record },
    });
    const partial = await cluster.startExecutor(undefined, {
      invokables: { source: () => undefined },
    });
    await checkUserCode(keyedGraph(), [complete]);
    const error = await expectRejection(
      checkUserCode(keyedGraph(), [complete, partial], (gateway) =>
        gateway === partial ? "task manager 1" : "task manager 0",
      ),
      TaskDeploymentError,
      ErrorCodes.TASK_DEPLOYMENT,
    );
    expect(error.message).toContain(
      'task manager 1 lacks invokable "count", serializer "clicks", key selector "word" (it registers invokables: source)',
    );
    expect(error.message).not.toContain("task manager 0");
  });

  it("names the TaskExecutor on which the job module does not load, and why", async () => {
    const withModule = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
    const without = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
    folders.push(withModule, without);
    writeFileSync(
      path.join(withModule, "job.mjs"),
      "export default { userCode: { invokables: { source() {}, count() {} }, serializers: { clicks: {} }, keySelectors: { word: (r) => r } }, createJobGraph() {} };\n",
    );
    const good = await cluster.startExecutor(undefined, { userCodeLoader: { cwd: withModule } });
    const bad = await cluster.startExecutor(undefined, { userCodeLoader: { cwd: without } });
    const graph = keyedGraph();
    graph.setUserCodeModule("./job.mjs");
    await checkUserCode(graph, [good]);
    const error = await expectRejection(
      checkUserCode(graph, [good, bad]),
      TaskDeploymentError,
      ErrorCodes.TASK_DEPLOYMENT,
    );
    expect(error.message).toContain("job module ./job.mjs");
    expect(error.message).toContain(
      `the TaskExecutor at ${bad.location.host}:${bad.location.dataPort} cannot load it`,
    );
    expect(error.message).toContain(path.join(without, "job.mjs"));
  });
});
