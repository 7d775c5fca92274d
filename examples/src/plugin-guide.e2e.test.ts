/**
 * The acceptance test of docs/writing-a-shuffle-plugin.md, as a plugin author outside this
 * repository would follow it: the packages and the conformance kit are published to the run's
 * test registry, the guide's decorator plugin (its code blocks that name a file) is written into
 * an empty folder, installed with pnpm from the registry (no workspace links), built with its own
 * TypeScript, and tested with its own vitest: the kit's conformance suite against the decorator,
 * every case passing, and the same cases as the kit lists for the TCP plugin the decorator wraps
 * (listed, not run: the decorator's run drives the TCP plugin already).
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trackChildProcess } from "./test-support/child-process-output.js";
import { type CodeBlock, codeBlocks } from "./test-support/markdown-code-blocks.js";
import {
  buildWorkspacePackagesIfStale,
  packWorkspacePackages,
} from "./test-support/packed-packages.js";
import { sluicePackagesNotFromRegistry, testRegistry } from "./test-support/test-registry.js";
import { guideCompilerOptions, typeCheckBlocks } from "./test-support/type-check.js";

const GUIDE = "docs/writing-a-shuffle-plugin.md";
/** Records per producer in the exactly-once case: enough to fill many buffers, cheap in CI. */
const RECORDS = 20_000;
/** A test file of the author's own, next to the guide's: the kit's cases for the wrapped plugin. */
const TCP_CONFORMANCE: CodeBlock & { file: string } = {
  document: "examples/src/plugin-guide.e2e.test.ts",
  language: "ts",
  file: "src/tcp-conformance.test.ts",
  line: 1,
  code: `import { describeShuffleServiceConformance } from "@sluice/shuffle-tck";

describeShuffleServiceConformance({ name: "tcp", factory: "@sluice/shuffle-tcp#TcpShuffleServiceFactory" });
`,
};

const root = mkdtempSync(path.join(tmpdir(), "sluice-plugin-guide-"));
/** The guide's layout: the tarballs in `sluice-packs/`, the plugin in a folder next to it. */
const packs = path.join(root, "sluice-packs");
const plugin = path.join(root, "logging-shuffle");

interface Step {
  readonly status: number | null;
  readonly output: string;
}

const running = new Set<ChildProcess>();

/** Runs `command` in `cwd` without blocking the event loop; kills it after `timeoutMs`. */
function run(
  command: string,
  args: readonly string[],
  cwd: string,
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Step> {
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  const tracked = trackChildProcess(child, running);
  let killed = "";
  const timer = setTimeout(() => {
    killed = `\n(killed after ${timeoutMs} ms)`;
    child.kill("SIGKILL");
  }, timeoutMs);
  return tracked.exited.then((status) => {
    clearTimeout(timer);
    return { status, output: tracked.output() + killed };
  });
}

/** The environment of a plugin author's shell: none of this test run's own vitest settings. */
function authorEnvironment(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !key.startsWith("VITEST") && key !== "NODE_OPTIONS",
    ),
  );
  return { ...env, SLUICE_TCK_RECORDS: String(RECORDS) };
}

let blocks: CodeBlock[] = [];
let install: Step | undefined;
let build: Step | undefined;

beforeAll(async () => {
  blocks = codeBlocks(GUIDE).filter((block) => block.file !== undefined);
  // Pack what the guide's overrides point at: the packages a plugin author installs.
  const overrides = blocks.find((block) => block.file === "pnpm-workspace.yaml")?.code ?? "";
  const packed = [...overrides.matchAll(/sluice-packs\/sluice-([a-z-]+)-\d+\.\d+\.\d+\.tgz/g)].map(
    (match) => match[1] as string,
  );
  buildWorkspacePackagesIfStale(packed);
  mkdirSync(packs);
  mkdirSync(path.join(plugin, "src"), { recursive: true });
  packWorkspacePackages(packed, packs);
  for (const block of [...blocks, TCP_CONFORMANCE]) {
    writeFileSync(path.join(plugin, block.file as string), block.code);
  }
  // Offline from the store that installed this repository; the registry serves what is missing.
  install = await run("pnpm", ["install", "--prefer-offline"], plugin, 180_000);
  if (install.status !== 0) return;
  build = await run(
    process.execPath,
    [path.join(plugin, "node_modules/typescript/bin/tsc"), "-p", "."],
    plugin,
    120_000,
  );
}, 360_000);

afterAll(() => {
  for (const child of running) child.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

interface CaseResult {
  readonly fullName: string;
  readonly status: string;
}

interface VitestReport {
  readonly numTotalTests: number;
  readonly numPassedTests: number;
  readonly testResults: readonly {
    readonly name: string;
    readonly assertionResults: readonly CaseResult[];
  }[];
}

describe("the plugin guide's decorator, tested with the conformance kit outside the repository", () => {
  it("installs the kit and the plugins from the registry and builds the guide's decorator", () => {
    expect(blocks.map((block) => block.file)).toEqual([
      "package.json",
      "tsconfig.json",
      "src/index.ts",
      "src/conformance.test.ts",
    ]);
    expect(install?.status, install?.output).toBe(0);
    // Every @sluice package, the transitive ones too, came from the registry by its version.
    const store = readdirSync(path.join(plugin, "node_modules/.pnpm"));
    const sluice = store.filter((entry) => entry.startsWith("@sluice+"));
    expect(sluice).toContainEqual(expect.stringMatching(/^@sluice\+shuffle-tck@\d+\.\d+\.\d+/));
    for (const entry of sluice) {
      expect(entry).toMatch(/^@sluice\+[a-z-]+@\d+\.\d+\.\d+(_|$)/);
    }
    expect(sluicePackagesNotFromRegistry(testRegistry(), plugin)).toEqual([]);
    expect(build?.status, build?.output).toBe(0);
    // The test files are not part of the build: vitest runs them from source. Check their types.
    const {
      rootDir: _sourcesOnly,
      declaration: _noEmit,
      ...options
    } = guideCompilerOptions(blocks);
    const tests = [...blocks, TCP_CONFORMANCE].filter((block) => block.file?.endsWith(".test.ts"));
    expect(typeCheckBlocks(tests, plugin, options)).toEqual([]);
  });

  it("passes every conformance case against the guide's decorator, the same cases the kit has for the TCP plugin, run by the author's vitest", async () => {
    expect(build?.status, "the decorator did not build").toBe(0);
    const vitestCli = path.join(plugin, "node_modules/vitest/vitest.mjs");
    const report = path.join(root, "report.json");
    const vitest = await run(
      process.execPath,
      [vitestCli, "run", "src/conformance.test.ts", "--reporter=json", `--outputFile=${report}`],
      plugin,
      300_000,
      authorEnvironment(),
    );
    expect(existsSync(report), `vitest wrote no report:\n${vitest.output}`).toBe(true);
    const json = JSON.parse(readFileSync(report, "utf8")) as VitestReport;
    expect(
      json.testResults.map((file) => path.relative(plugin, file.name)),
      vitest.output,
    ).toEqual(["src/conformance.test.ts"]);
    const decorator = json.testResults[0]?.assertionResults ?? [];
    const failed = decorator.filter((result) => result.status !== "passed");
    expect(failed, vitest.output).toEqual([]);
    expect(decorator.length).toBeGreaterThanOrEqual(19);
    expect([json.numPassedTests, json.numTotalTests]).toEqual([decorator.length, decorator.length]);
    expect(vitest.status, vitest.output).toBe(0);
    // Every case the kit has for a plugin ran: the kit's list for the TCP plugin, collected by
    // the author's vitest without running it, names the same cases.
    const listed = path.join(root, "tcp-cases.json");
    const list = await run(
      process.execPath,
      [vitestCli, "list", `--json=${listed}`, "src/tcp-conformance.test.ts"],
      plugin,
      120_000,
      authorEnvironment(),
    );
    expect(existsSync(listed), `vitest listed no cases:\n${list.output}`).toBe(true);
    const tcp = (JSON.parse(readFileSync(listed, "utf8")) as { name: string }[]).map((entry) =>
      entry.name.replaceAll(" > ", " "),
    );
    expect(decorator.map((result) => result.fullName.replace("logging-shuffle", "tcp"))).toEqual(
      tcp,
    );
    // The decorator was the plugin of every process: the worker processes' environments, one or
    // more per case, and the test process's master logged what they did at their close.
    const closes = [
      ...vitest.output.matchAll(
        /logging-shuffle \(pid (\d+)\): environment closed after creating (\d+) writers and (\d+) gates/g,
      ),
    ];
    expect(new Set(closes.map((match) => match[1])).size).toBeGreaterThanOrEqual(decorator.length);
    expect(closes.some((match) => Number(match[2]) > 0)).toBe(true);
    expect(closes.some((match) => Number(match[3]) > 0)).toBe(true);
    expect(vitest.output).toMatch(
      /logging-shuffle \(pid \d+\): master closed after registering [1-9]\d* partitions/,
    );
  }, 330_000);
});
