/**
 * A release, rehearsed: every public package under packages/ passes publint, is published to the
 * run's test registry as a release would publish it, and is installed into an empty project
 * outside the workspace with nothing else but what the registry serves. There, every entry point that a
 * package's `exports` names is imported as an ES module by Node and type-checked from a `.ts`
 * consumer compiled with `moduleResolution: NodeNext`, as an application compiles it.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { publint } from "publint";
import { formatMessage } from "publint/utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO } from "./test-support/markdown-code-blocks.js";
import { createScratchProject, type ScratchProject } from "./test-support/scratch-project.js";

interface PublicPackage {
  /** The folder under packages/ (`runtime-api`). */
  readonly folder: string;
  /** The package's name (`@sluice/runtime-api`). */
  readonly name: string;
  /** Every entry point an application can import (`@sluice/core`, `@sluice/core/testing`). */
  readonly entryPoints: readonly string[];
}

const PUBLIC_PACKAGES: readonly PublicPackage[] = readdirSync(path.join(REPO, "packages"))
  .sort()
  .map((folder) => ({
    folder,
    manifest: JSON.parse(readFileSync(path.join(REPO, "packages", folder, "package.json"), "utf8")),
  }))
  .filter(({ manifest }) => manifest.private !== true)
  .map(({ folder, manifest }) => ({
    folder,
    name: manifest.name as string,
    entryPoints: Object.entries(manifest.exports as Record<string, unknown>)
      .filter(([, target]) => target !== null)
      .map(([subpath]) =>
        subpath === "." ? manifest.name : `${manifest.name}${subpath.slice(1)}`,
      ),
  }));

const ENTRY_POINTS = PUBLIC_PACKAGES.flatMap((pkg) => pkg.entryPoints);

let project: ScratchProject | undefined;

beforeAll(() => {
  project = createScratchProject(
    "sluice-publish-",
    PUBLIC_PACKAGES.map((pkg) => pkg.folder),
    [],
    { "@types/node": "20.19.43" },
  );
}, 300_000);

afterAll(() => project?.remove());

function run(command: string, args: readonly string[], cwd: string) {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", timeout: 120_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe("a release of the public packages", () => {
  it.each(PUBLIC_PACKAGES.map((pkg) => [pkg.name, pkg] as const))(
    "%s: publint finds nothing to report",
    async (_name, pkg) => {
      const pkgDir = path.join(REPO, "packages", pkg.folder);
      const { messages, pkg: manifest } = await publint({
        pkgDir,
        level: "suggestion",
        strict: true,
        pack: "pnpm",
      });
      expect(messages.map((message) => formatMessage(message, manifest))).toEqual([]);
    },
    60_000,
  );

  it("imports every entry point of every public package as an ES module, installed from the registry", () => {
    const app = (project as ScratchProject).app;
    const script = [
      "const counts = {};",
      ...ENTRY_POINTS.map(
        (entry) =>
          `counts[${JSON.stringify(entry)}] = Object.keys(await import(${JSON.stringify(entry)})).length;`,
      ),
      "console.log(JSON.stringify(counts));",
    ].join("\n");
    writeFileSync(path.join(app, "import-every-entry-point.mjs"), script);
    const imported = run(process.execPath, ["import-every-entry-point.mjs"], app);
    expect(imported.output).not.toMatch(/Error/);
    expect(imported.status).toBe(0);
    const counts = JSON.parse(imported.output.trim().split("\n").at(-1) as string) as Record<
      string,
      number
    >;
    expect(Object.keys(counts).sort()).toEqual([...ENTRY_POINTS].sort());
    for (const entry of ENTRY_POINTS) expect(counts[entry], entry).toBeGreaterThan(0);
  });

  it("type-checks every entry point from a TypeScript consumer compiled for NodeNext", () => {
    const app = (project as ScratchProject).app;
    const consumer = ENTRY_POINTS.map(
      (entry, index) => `import * as entry${index} from ${JSON.stringify(entry)};`,
    );
    consumer.push(
      `export const entryPoints = [${ENTRY_POINTS.map((_, index) => `entry${index}`).join(", ")}];`,
    );
    writeFileSync(path.join(app, "consumer.ts"), `${consumer.join("\n")}\n`);
    writeFileSync(
      path.join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2023",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          types: ["node"],
          noEmit: true,
        },
        files: ["consumer.ts"],
      }),
    );
    // The application's own compiler would be its dependency; this repository's pinned one is
    // the same version, and no published package ships its own.
    const typeCheck = run(
      process.execPath,
      [path.join(REPO, "node_modules/typescript/bin/tsc"), "-p", "."],
      app,
    );
    expect(typeCheck.output).toBe("");
    expect(typeCheck.status).toBe(0);
    // tsc over every package's declarations: about 10 s of CPU, several times that on a busy
    // machine.
  }, 180_000);
});
