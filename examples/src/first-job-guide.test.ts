/**
 * docs/first-job.md's TypeScript cannot rot: every `ts` block of the guide (the word count job
 * module, its processes, and the keyed-state examples) is type-checked against this workspace's
 * packages with the compiler options the guide gives applications.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { codeBlocks, REPO } from "./test-support/markdown-code-blocks.js";
import { guideCompilerOptions, typeCheckBlocks } from "./test-support/type-check.js";

const GUIDE = "docs/first-job.md";

describe("the first-job guide's TypeScript", () => {
  it("type-checks against the packages, every block of docs/first-job.md", () => {
    const blocks = codeBlocks(GUIDE);
    const code = blocks.filter((block) => block.language === "ts");
    expect(code.map((block) => block.file)).toEqual(
      expect.arrayContaining(["word-count.ts", "local.ts", undefined]),
    );
    const diagnostics = typeCheckBlocks(
      code,
      path.join(REPO, "examples"),
      guideCompilerOptions(blocks),
    );
    expect(diagnostics).toEqual([]);
  }, 60_000);

  it("keeps the word count's job code within 15 lines", () => {
    const job = codeBlocks(GUIDE).find((block) => block.file === "word-count.ts");
    const lines = (job?.code ?? "").split("\n").filter((line) => line.trim() !== "");
    expect(lines.length).toBeLessThanOrEqual(15);
  });
});
