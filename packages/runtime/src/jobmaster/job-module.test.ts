import { describe, expect, it } from "vitest";
import { JobGraph } from "./job-graph.js";
import { defineJob, isJobModule } from "./job-module.js";

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
});
