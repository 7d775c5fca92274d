import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { JobGraph } from "../jobmaster/job-graph.js";
import { PluginInvalidError, PluginNotFoundError } from "../loader/errors.js";
import { LibraryCacheManager } from "./library-cache-manager.js";
import { LocalCluster } from "./test-support/local-cluster.js";

/** A job module in plain JavaScript: a source of 0..n-1 and a sink that sums what it reads. */
const JOB_MODULE = `
export const job = {
  userCode: {
    invokables: {
      numbers: async (task) => {
        const writer = task.writer();
        const n = task.configuration.records;
        for (let i = 0; i < n; i++) {
          if (!writer.isAvailable()) await writer.getAvailableFuture();
          writer.emit(i);
        }
      },
      sum: async (task) => {
        let sum = 0;
        for await (const value of task.reader()) sum += value;
        return { sum };
      },
    },
  },
  createJobGraph: () => { throw new Error("not called by a task manager"); },
};
`;

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function userCodeFolder(): string {
  const folder = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
  folders.push(folder);
  writeFileSync(path.join(folder, "job.mjs"), JOB_MODULE);
  return folder;
}

describe("LibraryCacheManager", () => {
  it("loads a job module from the task manager's folders once, and names its user code", async () => {
    const folder = userCodeFolder();
    const libraries = new LibraryCacheManager({ cwd: folder });
    const first = libraries.registryOf("./job.mjs#job");
    expect(libraries.registryOf("./job.mjs#job")).toBe(first);
    expect(await libraries.namesOf("./job.mjs#job")).toEqual({
      invokables: ["numbers", "sum"],
      serializers: [],
      keySelectors: [],
      partitioners: [],
    });
  });

  it("does not keep a module that failed to load, so a later deployment finds it", async () => {
    const folder = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
    folders.push(folder);
    const libraries = new LibraryCacheManager({ cwd: folder });
    const error = await expectRejection(
      libraries.registryOf("./job.mjs#job"),
      PluginNotFoundError,
      ErrorCodes.PLUGIN_NOT_FOUND,
    );
    expect(error.message).toContain(path.join(folder, "job.mjs"));
    writeFileSync(path.join(folder, "job.mjs"), JOB_MODULE);
    expect((await libraries.namesOf("./job.mjs#job")).invokables).toEqual(["numbers", "sum"]);
  });

  it("refuses an export that is no job module, saying what it lacks", async () => {
    const folder = userCodeFolder();
    writeFileSync(path.join(folder, "other.mjs"), "export const job = { invokables: {} };\n");
    const error = await expectRejection(
      new LibraryCacheManager({ cwd: folder }).registryOf("./other.mjs#job"),
      PluginInvalidError,
      ErrorCodes.PLUGIN_INVALID,
    );
    expect(error.message).toContain("userCode");
  });
});

describe("a TaskExecutor running a job that names its job module", () => {
  const cluster = new LocalCluster();
  afterEach(() => cluster.close());

  it("runs the job with the module's user code, loaded from the TaskExecutor's own folders", async () => {
    const folder = userCodeFolder();
    // No invokables registered with the executor: all code comes from the job module.
    const executor = await cluster.startExecutor(undefined, { userCodeLoader: { cwd: folder } });
    const deployer = await cluster.startDeployer();
    const graph = new JobGraph("from a module");
    graph.setUserCodeModule("./job.mjs#job");
    const numbers = graph.addVertex({
      name: "Numbers",
      parallelism: 2,
      invokable: "numbers",
      configuration: { records: 1000 },
    });
    const sum = graph.addVertex({ name: "Sum", parallelism: 1, invokable: "sum" });
    graph.connect(numbers, sum, { partitioner: { name: "REBALANCE" }, serializer: "int32" });
    const result = await (await deployer.deploy(graph, () => executor)).terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Sum")).toEqual([{ sum: 2 * ((999 * 1000) / 2) }]);
    expect(await executor.userCodeNames("./job.mjs#job")).toMatchObject({
      invokables: ["numbers", "sum"],
    });
  });

  it("fails the deployment naming the module and the TaskExecutor when the module is missing there", async () => {
    const folder = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
    folders.push(folder);
    const executor = await cluster.startExecutor(undefined, { userCodeLoader: { cwd: folder } });
    const deployer = await cluster.startDeployer();
    const graph = new JobGraph("missing module");
    graph.setUserCodeModule("./job.mjs#job");
    graph.addVertex({ name: "Alone", parallelism: 1, invokable: "numbers" });
    const result = await (await deployer.deploy(graph, () => executor)).terminated;
    expect(result.status).toBe("FAILED");
    expect(result.error).toMatchObject({ code: ErrorCodes.TASK_DEPLOYMENT });
    expect(result.error?.message).toContain("./job.mjs#job");
    expect(result.error?.message).toContain(
      `${executor.location.host}:${executor.location.dataPort}`,
    );
  });
});
