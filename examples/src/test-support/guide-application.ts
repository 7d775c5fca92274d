import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type CodeBlock, codeBlocks, REPO } from "./markdown-code-blocks.js";
import { buildPackagesIfStale } from "./packed-packages.js";
import { useTestRegistry } from "./test-registry.js";

/** The outcome of one step of the installation. */
export interface Step {
  readonly status: number | null;
  readonly output: string;
}

/** The embedding guide's application, installed as the guide says, outside the repository. */
export interface GuideApplication {
  /** The application's folder: the guide's files, their node_modules and the compiled `dist/`. */
  readonly app: string;
  /** `pnpm install` from the run's test registry. */
  readonly install: Step;
  /** `tsc -p .` with the repository's TypeScript (not run when the install failed). */
  readonly typeCheck: Step | undefined;
  /** Deletes everything. */
  remove(): void;
}

function run(command: string, args: readonly string[], cwd: string): Step {
  const result = spawnSync(command, args, { cwd, encoding: "utf8" });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/**
 * Follows docs/embedding.md as a user outside this repository would (as
 * `embedding-guide.e2e.test.ts` does): writes every code block of the guide that names a file into
 * an empty folder, installs it with pnpm from the run's test registry (the packages by name and
 * version, as from any registry) and compiles it with the repository's TypeScript.
 */
export function installGuideApplication(prefix: string): GuideApplication {
  buildPackagesIfStale();
  useTestRegistry();
  const root = mkdtempSync(path.join(tmpdir(), prefix));
  const app = path.join(root, "my-app");
  mkdirSync(app);
  const files = codeBlocks("docs/embedding.md").filter(
    (block): block is CodeBlock & { file: string } => block.file !== undefined,
  );
  for (const block of files) writeFileSync(path.join(app, block.file), block.code);
  // Offline from the store that installed this repository; the registry serves what is missing.
  const install = run("pnpm", ["install", "--prefer-offline"], app);
  const typeCheck =
    install.status === 0
      ? run(process.execPath, [path.join(REPO, "node_modules/typescript/bin/tsc"), "-p", "."], app)
      : undefined;
  return {
    app,
    install,
    typeCheck,
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
