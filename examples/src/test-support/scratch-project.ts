import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import ts from "typescript";
import { testRegistry } from "./test-registry.js";
import { manifestOf } from "./workspace-packages.js";

/** An application folder outside the workspace, with the packages installed from a registry. */
export interface ScratchProject {
  /** The temporary folder that holds the application (`app/`). */
  readonly root: string;
  /** The application: its package.json, node_modules and the compiled sources. */
  readonly app: string;
  /** Deletes everything. */
  remove(): void;
}

/**
 * Creates a scratch application as a user outside this repository would: a package.json that
 * depends on `dependencies` (package folder names, `cluster`) by their version and on
 * `devDependencies`, `sources` (TypeScript files of this repository that import only published
 * packages) compiled next to it as JavaScript, installed with `pnpm install` from the run's test
 * registry, where every package was published (`test-registry.ts`). The project has no other
 * configuration: no tarball, override or build-script approval. (The registry test installs
 * with npm too.)
 *
 * @throws an Error with pnpm's output when the install fails.
 */
export function createScratchProject(
  prefix: string,
  dependencies: readonly string[],
  sources: readonly string[],
  devDependencies: Readonly<Record<string, string>> = {},
): ScratchProject {
  const registry = testRegistry();
  const root = mkdtempSync(path.join(tmpdir(), prefix));
  const remove = () => rmSync(root, { recursive: true, force: true });
  try {
    const app = path.join(root, "app");
    mkdirSync(app);
    const packageJson = {
      name: "scratch-app",
      private: true,
      type: "module",
      dependencies: Object.fromEntries(
        dependencies.map((name) => [`@sluice/${name}`, manifestOf(name).version]),
      ),
      devDependencies,
    };
    writeFileSync(path.join(app, "package.json"), `${JSON.stringify(packageJson, null, 2)}\n`);
    for (const source of sources) {
      const { outputText } = ts.transpileModule(readFileSync(source, "utf8"), {
        fileName: source,
        compilerOptions: {
          module: ts.ModuleKind.ESNext,
          target: ts.ScriptTarget.ES2023,
          verbatimModuleSyntax: true,
        },
      });
      writeFileSync(path.join(app, path.basename(source).replace(/\.ts$/, ".js")), outputText);
    }
    const install = spawnSync("pnpm", ["install"], {
      cwd: app,
      encoding: "utf8",
      env: { ...process.env, ...registry.env },
    });
    if (install.status !== 0) {
      throw new Error(`pnpm install in ${app} failed:\n${install.stdout}${install.stderr}`);
    }
    return { root, app, remove };
  } catch (error) {
    remove();
    throw error;
  }
}
