/**
 * Every package's README is what its registry page shows, so its example must be true: each
 * package under packages/ has a README that links the configuration and error references, every
 * `ts` block of it type-checks against the packages, and every `ts` block that a `text` block
 * follows ("It prints:") is compiled, run with Node against the built packages, and prints
 * exactly that text.
 */
import { spawn } from "node:child_process";
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { type CodeBlock, codeBlocks, REPO } from "./test-support/markdown-code-blocks.js";
import { guideCompilerOptions, typeCheckBlocks } from "./test-support/type-check.js";

/** The published packages: a private one (the test harness) has no registry page. */
const PACKAGES = readdirSync(path.join(REPO, "packages"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .filter(
    (name) =>
      JSON.parse(readFileSync(path.join(REPO, "packages", name, "package.json"), "utf8"))
        .private !== true,
  )
  .sort();

/** A `ts` block and the output it claims: the `text` block right after it. */
interface RunnableExample {
  readonly code: CodeBlock;
  readonly expectedOutput: string;
}

function runnableExamples(blocks: readonly CodeBlock[]): RunnableExample[] {
  const examples: RunnableExample[] = [];
  for (let i = 0; i + 1 < blocks.length; i++) {
    const code = blocks[i] as CodeBlock;
    const output = blocks[i + 1] as CodeBlock;
    if (code.language === "ts" && output.language === "text") {
      examples.push({ code, expectedOutput: output.code.trimEnd() });
    }
  }
  return examples;
}

/**
 * The examples run from a scratch folder whose node_modules is the examples package's own, so
 * `@sluice/*` resolve to the built packages as they would in an application; the working
 * directory is the examples package, where the loader finds the plugins the examples name.
 */
const scratch = mkdtempSync(path.join(tmpdir(), "sluice-readmes-"));
symlinkSync(path.join(REPO, "examples", "node_modules"), path.join(scratch, "node_modules"));
writeFileSync(path.join(scratch, "package.json"), '{ "type": "module" }\n');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function runExample(example: RunnableExample, name: string): Promise<string> {
  const { outputText } = ts.transpileModule(example.code.code, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 },
  });
  const file = path.join(scratch, `${name}.mjs`);
  writeFileSync(file, outputText);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], {
      cwd: path.join(REPO, "examples"),
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code === 0) resolve(stdout.trimEnd());
      else {
        const how = signal === null ? `exit code ${code}` : `signal ${signal}`;
        reject(new Error(`${example.code.document}:${example.code.line}: ${how}\n${stderr}`));
      }
    });
  });
}

const guideOptions = guideCompilerOptions(codeBlocks("docs/embedding.md"));

describe.each(PACKAGES)("packages/%s/README.md", (name) => {
  const document = `packages/${name}/README.md`;
  const blocks = codeBlocks(document);
  const code = blocks.filter((block) => block.language === "ts");

  it("has an example and links the configuration and error references", () => {
    expect(code.length).toBeGreaterThanOrEqual(1);
    const readme = readFileSync(path.join(REPO, document), "utf8");
    expect(readme).toContain("](../../docs/configuration.md)");
    expect(readme).toContain("](../../docs/errors.md)");
  });

  it("type-checks every TypeScript block against the packages", () => {
    const diagnostics = typeCheckBlocks(code, path.join(REPO, "examples"), guideOptions);
    expect(diagnostics).toEqual([]);
  }, 60_000);

  const examples = runnableExamples(blocks);
  // The conformance kit's example is a test file, run from the published packages elsewhere (below).
  if (examples.length > 0) {
    it("runs every example that shows its output, and prints exactly that output", async () => {
      for (const [index, example] of examples.entries()) {
        expect(await runExample(example, `${name}-${index}`)).toBe(example.expectedOutput);
      }
    }, 120_000);
  }
});

describe("the conformance kit's README", () => {
  it("shows the plugin guide's conformance test, which CI runs from the published packages", () => {
    const [readmeBlock] = codeBlocks("packages/shuffle-tck/README.md").filter(
      (block) => block.language === "ts",
    );
    const guideBlock = codeBlocks("docs/writing-a-shuffle-plugin.md").find((block) =>
      block.code.includes("describeShuffleServiceConformance("),
    );
    expect(readmeBlock?.code).toBe(guideBlock?.code);
  });
});
