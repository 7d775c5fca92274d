import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import ts from "typescript";
import {
  buildWorkspacePackagesIfStale,
  PUBLISHED_PACKAGES,
  packWorkspacePackages,
} from "./packed-packages.js";

/** An application folder outside the workspace, with the packages installed from tarballs. */
export interface ScratchProject {
  /** The folder that holds the tarballs (`sluice-packs/`) and the application (`app/`). */
  readonly root: string;
  /** The application: its package.json, node_modules and the compiled sources. */
  readonly app: string;
  /** Deletes everything. */
  remove(): void;
}

/**
 * Creates a scratch application as a user outside this repository would: builds the published
 * packages and `dependencies` if stale, packs them into tarballs, writes a package.json that
 * depends on `dependencies` (package folder names, `cluster`) as `file:` tarballs and on
 * `devDependencies` from the registry, with pnpm overrides for every packed `@sluice` package
 * (they depend on each other by a version no registry serves), compiles `sources` (TypeScript
 * files of this repository that import only published packages) next to it as JavaScript, and
 * installs it with pnpm.
 *
 * @throws an Error with pnpm's output when the install fails.
 */
export function createScratchProject(
  prefix: string,
  dependencies: readonly string[],
  sources: readonly string[],
  devDependencies: Readonly<Record<string, string>> = {},
): ScratchProject {
  const packed = [...new Set([...PUBLISHED_PACKAGES, ...dependencies])];
  buildWorkspacePackagesIfStale(packed);
  const root = mkdtempSync(path.join(tmpdir(), prefix));
  const remove = () => rmSync(root, { recursive: true, force: true });
  try {
    const packs = path.join(root, "sluice-packs");
    const app = path.join(root, "app");
    mkdirSync(packs);
    mkdirSync(app);
    const tarballs = packWorkspacePackages(packed, packs);
    const tarball = (name: string) => {
      const file = tarballs.find((t) => new RegExp(`^sluice-${name}-\\d`).test(t));
      if (file === undefined) throw new Error(`no tarball of @sluice/${name} in ${tarballs}`);
      return `file:../sluice-packs/${file}`;
    };
    const packageJson = {
      name: "scratch-app",
      private: true,
      type: "module",
      dependencies: Object.fromEntries(
        dependencies.map((name) => [`@sluice/${name}`, tarball(name)]),
      ),
      devDependencies,
    };
    writeFileSync(path.join(app, "package.json"), `${JSON.stringify(packageJson, null, 2)}\n`);
    const overrides = packed.map((name) => `  "@sluice/${name}": "${tarball(name)}"`);
    // No allowBuilds: no package installs with a script (pnpm exits 1 on one that is not listed).
    writeFileSync(path.join(app, "pnpm-workspace.yaml"), `overrides:\n${overrides.join("\n")}\n`);
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
    // Offline from the store that installed this repository; the registry serves what is missing.
    const install = spawnSync("pnpm", ["install", "--prefer-offline"], {
      cwd: app,
      encoding: "utf8",
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
