/**
 * The documentation's TypeScript cannot rot: every `ts` block of the README and of the embedding
 * guide is type-checked against this workspace's packages, with the compiler options the guide
 * gives applications.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { codeBlocks, REPO } from "./test-support/markdown-code-blocks.js";
import { guideCompilerOptions, typeCheckBlocks } from "./test-support/type-check.js";

describe("the documentation's TypeScript", () => {
  it("type-checks against the packages, every block of README.md and docs/embedding.md", () => {
    const readme = codeBlocks("README.md").filter((block) => block.language === "ts");
    const guide = codeBlocks("docs/embedding.md");
    const guideCode = guide.filter((block) => block.language === "ts");
    // The README's complete program, and the guide's producer, consumer, batch job, checkpointed
    // job and channel example.
    expect(readme.length).toBeGreaterThanOrEqual(1);
    expect(guideCode.map((block) => block.file)).toEqual(
      expect.arrayContaining([
        "producer.ts",
        "consumer.ts",
        "batch.ts",
        "checkpointed.ts",
        undefined,
      ]),
    );
    const diagnostics = typeCheckBlocks(
      [...readme, ...guideCode],
      path.join(REPO, "examples"),
      guideCompilerOptions(guide),
    );
    expect(diagnostics).toEqual([]);
  }, 60_000);
});
