import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { PluginInvalidError } from "../loader/errors.js";
import { JobGraph } from "./job-graph.js";
import { defineJob, isJobModule, loadJobModule } from "./job-module.js";

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe("job modules", () => {
  it("recognises an object with createJobGraph and userCode as a job module", () => {
    const module = defineJob({
      userCode: { invokables: { run: () => undefined } },
      createJobGraph: () => new JobGraph("job"),
    });
    expect(isJobModule(module)).toBe(true);
    expect(isJobModule({ createJobGraph: () => new JobGraph("job") })).toBe(false);
    expect(isJobModule({ userCode: {}, createJobGraph: "graph" })).toBe(false);
    expect(isJobModule({ userCode: null, createJobGraph: () => undefined })).toBe(false);
    expect(isJobModule(null)).toBe(false);
  });

  it("loads a job module by reference from the working directory", async () => {
    const folder = mkdtempSync(path.join(tmpdir(), "sluice-job-"));
    folders.push(folder);
    writeFileSync(
      path.join(folder, "job.mjs"),
      "export const wordCount = { name: 'words', userCode: { invokables: {} }, createJobGraph: () => 'graph' };\n",
    );
    const loaded = await loadJobModule("./job.mjs#wordCount", { cwd: folder });
    expect(loaded.file).toBe(path.join(folder, "job.mjs"));
    expect(loaded.exportName).toBe("wordCount");
    expect(loaded.module.name).toBe("words");
  });

  it("names what an export lacks to be a job module", async () => {
    const folder = mkdtempSync(path.join(tmpdir(), "sluice-job-"));
    folders.push(folder);
    writeFileSync(path.join(folder, "job.mjs"), "export default { userCode: {} };\n");
    const error = await expectRejection(
      loadJobModule("./job.mjs", { cwd: folder }),
      PluginInvalidError,
      ErrorCodes.PLUGIN_INVALID,
    );
    expect(error.message).toContain("createJobGraph()");
    expect(error.message).not.toContain("userCode()");
  });
});
