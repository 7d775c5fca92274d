import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type CodeBlock, codeBlocks, REPO } from "./markdown-code-blocks.js";
import {
  buildWorkspacePackagesIfStale,
  PUBLISHED_PACKAGES,
  packWorkspacePackages,
} from "./packed-packages.js";

/** The outcome of one step of the installation. */
export interface Step {
  readonly status: number | null;
  readonly output: string;
}

/** The embedding guide's application, installed as the guide says, outside the repository. */
export interface GuideApplication {
  /** The folder with `sluice-packs/` (the tarballs) and `my-app/` next to it. */
  readonly root: string;
  /** `my-app/`: the guide's files, their node_modules, and the compiled `dist/`. */
  readonly app: string;
  /** `pnpm install` of the tarballs. */
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
 * Follows docs/embedding.md as a user outside this repository would: packs the packages into
 * `sluice-packs/`, writes every code block of the guide that names a file into `my-app/` next to
 * it, installs with pnpm from the tarballs (no workspace links) and compiles with the repository's
 * TypeScript.
 */
export function installGuideApplication(prefix: string): GuideApplication {
  buildWorkspacePackagesIfStale(PUBLISHED_PACKAGES);
  const root = mkdtempSync(path.join(tmpdir(), prefix));
  const packs = path.join(root, "sluice-packs");
  const app = path.join(root, "my-app");
  mkdirSync(packs);
  mkdirSync(app);
  packWorkspacePackages(PUBLISHED_PACKAGES, packs);
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
    root,
    app,
    install,
    typeCheck,
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
