/**
 * The acceptance test of docs/first-job.md, as a user outside this repository would follow it:
 * the packages, `@sluice/datastream` with them, are published to the run's test registry, the
 * guide's files (its code blocks that name a file) are written into an empty folder, installed with
 * pnpm from the run's test registry, type-checked with this repository's TypeScript, and run:
 * the keyed word count in one process, and with the guide's `sluice` processes (a job manager,
 * two task managers, `sluice run`) over TCP and over WebSocket, chosen by configuration only,
 * with one task manager killed once a checkpoint committed output and a replacement started. Each run's output files must hold every word's
 * running counts 1..n exactly once, and no in-progress or pending part file.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "@sluice/core/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type TrackedChildProcess,
  trackChildProcess,
} from "./test-support/child-process-output.js";
import { type CodeBlock, codeBlocks, REPO } from "./test-support/markdown-code-blocks.js";
import {
  buildWorkspacePackagesIfStale,
  PUBLISHED_PACKAGES,
  packWorkspacePackages,
} from "./test-support/packed-packages.js";
import { sluicePackagesNotFromRegistry, testRegistry } from "./test-support/test-registry.js";

const GUIDE = "docs/first-job.md";
const PACKAGES = [...PUBLISHED_PACKAGES, "datastream"] as const;
const root = mkdtempSync(path.join(tmpdir(), "sluice-first-job-"));
const packs = path.join(root, "sluice-packs");
const app = path.join(root, "my-job");

interface Step {
  readonly status: number | null;
  readonly output: string;
}
let install: Step | undefined;
let typeCheck: Step | undefined;

function run(command: string, args: readonly string[], cwd: string): Step {
  const result = spawnSync(command, args, { cwd, encoding: "utf8" });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

beforeAll(() => {
  buildWorkspacePackagesIfStale(PACKAGES);
  mkdirSync(packs);
  mkdirSync(app);
  packWorkspacePackages(PACKAGES, packs);
  const files = codeBlocks(GUIDE).filter(
    (block): block is CodeBlock & { file: string } => block.file !== undefined,
  );
  for (const block of files) writeFileSync(path.join(app, block.file), block.code);
  install = run("pnpm", ["install", "--prefer-offline"], app);
  if (install.status !== 0) return;
  typeCheck = run(
    process.execPath,
    [path.join(REPO, "node_modules/typescript/bin/tsc"), "-p", "."],
    app,
  );
}, 300_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill("SIGKILL");
  // Each run starts from an empty output and checkpoint folder.
  rmSync(path.join(app, "out"), { recursive: true, force: true });
  rmSync(path.join(app, "checkpoints"), { recursive: true, force: true });
});

function start(
  script: string,
  args: readonly string[],
): TrackedChildProcess & { child: ChildProcess } {
  const child = spawn(process.execPath, [path.join("dist", script), ...args], {
    cwd: app,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { child, ...trackChildProcess(child, running) };
}

/** The installed `sluice` command of @sluice/cluster, in the application's folder. */
function sluice(...args: string[]): TrackedChildProcess & { child: ChildProcess } {
  const child = spawn(path.join(app, "node_modules/.bin/sluice"), args, {
    cwd: app,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { child, ...trackChildProcess(child, running) };
}

async function until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The word count's expected output lines: every word's running counts 1..n. */
function expectedLines(): string[] {
  const job = readFileSync(path.join(app, "word-count.ts"), "utf8");
  const text = JSON.parse(/const text = (\[.*\]);/.exec(job)?.[1] ?? "[]") as string[];
  const lines = Number(/fromGenerator\(([\d_]+),/.exec(job)?.[1]?.replaceAll("_", ""));
  const totals = new Map<string, number>();
  for (let i = 0; i < lines; i++) {
    for (const word of (text[i % text.length] as string).split(" ")) {
      totals.set(word, (totals.get(word) ?? 0) + 1);
    }
  }
  return [...totals].flatMap(([word, n]) =>
    Array.from({ length: n }, (_, i) => `${word} ${i + 1}`),
  );
}

/** The committed output lines; none of the sink's hidden in-progress or pending files is left. */
function outputLines(): string[] {
  const out = path.join(app, "out");
  const files = readdirSync(out);
  expect(files.filter((file) => file.startsWith("."))).toEqual([]);
  return files
    .map((file) => readFileSync(path.join(out, file), "utf8"))
    .join("")
    .split("\n")
    .filter((line) => line !== "");
}

function committedFiles(): number {
  try {
    return readdirSync(path.join(app, "out")).filter((file) => !file.startsWith(".")).length;
  } catch {
    return 0;
  }
}

describe("the first-job guide's word count, outside the repository", () => {
  it("installs from the registry by version and type-checks with the repository's TypeScript", () => {
    expect(install?.status, install?.output).toBe(0);
    const store = readdirSync(path.join(app, "node_modules/.pnpm"));
    expect(store).toContainEqual(expect.stringMatching(/^@sluice\+datastream@\d+\.\d+\.\d+$/));
    expect(sluicePackagesNotFromRegistry(testRegistry(), app)).toEqual([]);
    expect(typeCheck?.status, typeCheck?.output).toBe(0);
  });

  it("counts every word exactly once in one process", async () => {
    expect(typeCheck?.status, "the example did not compile").toBe(0);
    const local = start("local.js", []);
    expect(await local.exited, local.output()).toBe(0);
    expect(local.output()).toContain("FINISHED after 0 restart(s)");
    const lines = outputLines();
    expect(lines.length).toBe(expectedLines().length);
    expect(lines.sort()).toEqual(expectedLines().sort());
  }, 60_000);

  it.each(["tcp", "ws"])(
    "counts every word exactly once over %s with the sluice processes, one task manager killed after a checkpoint committed output",
    async (shuffle) => {
      expect(typeCheck?.status, "the example did not compile").toBe(0);
      const rpcPort = await freePort();
      const restPort = await freePort();
      const config = [
        "--config",
        "sluice.yaml",
        "-D",
        `shuffle-service-factory.class=${shuffle}`,
        "-D",
        `jobmanager.rpc.port=${rpcPort}`,
        "-D",
        `rest.port=${restPort}`,
      ];
      const jobManager = sluice("jobmanager", ...config);
      const killed = sluice("taskmanager", ...config);
      const survivor = sluice("taskmanager", ...config);
      await until(
        () => (jobManager.output().match(/ registered$/gm) ?? []).length === 2,
        "two task managers to register",
      );
      const run = sluice("run", ...config, "dist/word-count.js");
      await until(() => committedFiles() > 0, "a checkpoint to commit a part file").catch(
        (error: Error) => {
          throw new Error(
            `${error.message}\nsluice run: ${run.output()}\njob manager: ${jobManager.output()}\ntask managers: ${killed.output()}${survivor.output()}`,
          );
        },
      );
      killed.child.kill("SIGKILL");
      const replacement = sluice("taskmanager", ...config);
      expect(await run.exited, run.output()).toBe(0);
      expect(run.output()).toMatch(/job [0-9a-f]{32} FINISHED after 1 restart\(s\)/);
      expect(await killed.exited).toBeNull();
      jobManager.child.kill("SIGTERM");
      expect(await jobManager.exited, jobManager.output()).toBe(143);
      for (const taskManager of [survivor, replacement]) {
        expect(await taskManager.exited, taskManager.output()).toBe(0);
      }
      const lines = outputLines();
      expect(lines.length).toBe(expectedLines().length);
      expect(lines.sort()).toEqual(expectedLines().sort());
    },
    90_000,
  );
});
