/**
 * The acceptance test of docs/embedding.md, as a user outside this repository would follow it:
 * the packages are published to the run's test registry, the guide's files (its code blocks that
 * name a file) are written into an empty folder, installed with pnpm from the registry (no
 * workspace links, no tarballs), type-checked with this repository's TypeScript, and run over TCP
 * and over WebSocket,
 * chosen by configuration only: the two-process example moving 10^6 records exactly once, the
 * batch job stage by stage, and the checkpointed job through its injected failure, each printing
 * exactly what the guide says it prints.
 */
import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, waitFor } from "@sluice/core/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type AppProcess,
  sessionClusterFlags,
  spawnInApp,
  taskManagersRegistered,
} from "./test-support/child-process-output.js";
import { type CodeBlock, codeBlocks, REPO } from "./test-support/markdown-code-blocks.js";
import {
  buildPackagesIfStale,
  PUBLISHED_PACKAGES,
  packPackages,
} from "./test-support/packed-packages.js";
import { sluicePackagesNotFromRegistry, testRegistry } from "./test-support/test-registry.js";

const RECORDS = 1_000_000;
const root = mkdtempSync(path.join(tmpdir(), "sluice-embedding-"));
/** The guide's layout: the tarballs in `sluice-packs/`, the application in `my-app/` next to it. */
const packs = path.join(root, "sluice-packs");
const app = path.join(root, "my-app");

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
  buildPackagesIfStale();
  mkdirSync(packs);
  mkdirSync(app);
  packPackages(packs);
  const files = codeBlocks("docs/embedding.md").filter(
    (block): block is CodeBlock & { file: string } => block.file !== undefined,
  );
  for (const block of files) writeFileSync(path.join(app, block.file), block.code);
  // Offline from the store that installed this repository; the registry serves what is missing.
  install = run("pnpm", ["install", "--prefer-offline"], app);
  if (install.status !== 0) return;
  typeCheck = run(
    process.execPath,
    [path.join(REPO, "node_modules/typescript/bin/tsc"), "-p", "."],
    app,
  );
}, 180_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill("SIGKILL");
});

function start(script: string, args: readonly string[]): AppProcess {
  return spawnInApp(app, running, [process.execPath, path.join("dist", script), ...args]);
}

/** The installed `sluice` command of @sluice/cluster, in the application's folder. */
function sluice(...args: string[]): AppProcess {
  return spawnInApp(app, running, [path.join(app, "node_modules/.bin/sluice"), ...args]);
}

describe("the embedding guide's two-process example, outside the repository", () => {
  it("installs from the registry by version, not from workspace links or tarballs, and type-checks with the repository's TypeScript", () => {
    expect(install?.status, install?.output).toBe(0);
    // Every @sluice package, the transitive ones too, came from the registry by its version.
    const store = readdirSync(path.join(app, "node_modules/.pnpm"));
    for (const name of PUBLISHED_PACKAGES) {
      expect(store).toContainEqual(
        expect.stringMatching(new RegExp(`^@sluice\\+${name}@\\d+\\.\\d+\\.\\d+$`)),
      );
    }
    expect(sluicePackagesNotFromRegistry(testRegistry(), app)).toEqual([]);
    expect(store.filter((entry) => entry.startsWith("@sluice+"))).toHaveLength(
      PUBLISHED_PACKAGES.length,
    );
    const cluster = realpathSync(path.join(app, "node_modules/@sluice/cluster"));
    expect(cluster.startsWith(path.join(app, "node_modules/.pnpm"))).toBe(true);
    expect(typeCheck?.status, typeCheck?.output).toBe(0);
  });

  it.each([
    ["tcp", "@sluice/shuffle-tcp#TcpShuffleServiceFactory"],
    ["ws", "@sluice/shuffle-ws#WsShuffleServiceFactory"],
  ])(
    "moves 10^6 records from the producer process to the consumer process exactly once and in order over %s, chosen by configuration only",
    async (shuffle, factory) => {
      expect(typeCheck?.status, "the example did not compile").toBe(0);
      const config = ["-D", `shuffle-service-factory.class=${shuffle}`];
      const producer = start("producer.js", ["-D", "jobmanager.rpc.port=0", ...config]);
      let port = 0;
      await waitFor(
        () => {
          port = Number(/job manager on port (\d+)/.exec(producer.output())?.[1] ?? 0);
          return port > 0 || producer.child.exitCode !== null;
        },
        { what: "the producer's job manager to listen", timeoutMs: 20_000, intervalMs: 50 },
      );
      expect(producer.output()).toContain(`shuffle ${factory}`);
      const consumer = start("consumer.js", ["-D", `jobmanager.rpc.port=${port}`, ...config]);

      const [produced, consumed] = await Promise.all([producer.exited, consumer.exited]);
      expect(produced, producer.output()).toBe(0);
      expect(producer.output()).toContain(`FINISHED [{"received":${RECORDS}}]`);
      expect(consumed, consumer.output()).toBe(0);
      expect(consumer.output()).toContain("task manager 0 registered");
      expect(consumer.output()).toContain("task manager ended: shutdown (the job ended FINISHED)");
    },
    60_000,
  );
});

describe("the embedding guide's session cluster of sluice processes, outside the repository", () => {
  it.each(["tcp", "ws"])(
    "runs the guide's job module with sluice run on two sluice task managers over %s, lists it, and stops the cluster",
    async (shuffle) => {
      expect(typeCheck?.status, "the example did not compile").toBe(0);
      const rpcPort = await freePort();
      const restPort = await freePort();
      const config = sessionClusterFlags(shuffle, {
        "jobmanager.rpc.port": rpcPort,
        "rest.port": restPort,
      });
      const jobManager = sluice("jobmanager", ...config);
      const taskManagers = [sluice("taskmanager", ...config), sluice("taskmanager", ...config)];
      await taskManagersRegistered(jobManager, 2);
      const submitted = sluice("run", ...config, "dist/numbers-job.js", "200000");
      expect(await submitted.exited, submitted.output()).toBe(0);
      expect(submitted.output()).toMatch(/job [0-9a-f]{32} \(numbers 0\.\.199999\) submitted/);
      expect(submitted.output()).toMatch(/job [0-9a-f]{32} FINISHED after 0 restart\(s\)/);
      const jobId = /job ([0-9a-f]{32})/.exec(submitted.output())?.[1] as string;
      const listed = sluice("list", ...config);
      expect(await listed.exited, listed.output()).toBe(0);
      expect(listed.output()).toMatch(new RegExp(`${jobId}\\s+FINISHED`));
      jobManager.child.kill("SIGTERM");
      expect(await jobManager.exited).toBe(143);
      for (const taskManager of taskManagers) {
        expect(await taskManager.exited, taskManager.output()).toBe(0);
      }
    },
    90_000,
  );
});

/**
 * The output the guide shows for the example in `file`: the first `text` block after the file's
 * code block, line by line.
 */
function documentedOutput(file: string): string[] {
  const blocks = codeBlocks("docs/embedding.md");
  const at = blocks.findIndex((block) => block.file === file);
  const shown = blocks.slice(at + 1).find((block) => block.language === "text");
  if (at < 0 || shown === undefined)
    throw new Error(`docs/embedding.md shows no output of ${file}`);
  return lines(shown.code);
}

/** The non-empty lines of `text`, without trailing spaces. */
function lines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line !== "");
}

describe("the embedding guide's batch and checkpointed examples, outside the repository", () => {
  it.each(["tcp", "ws"])(
    "runs the batch job stage by stage over %s: Sum starts after Numbers finished, reads 4 files and every one of 10^6 records, and the job's end deletes the files",
    async (shuffle) => {
      expect(typeCheck?.status, "the examples did not compile").toBe(0);
      const run = start("batch.js", ["-D", `shuffle-service-factory.class=${shuffle}`]);
      expect(await run.exited, run.output()).toBe(0);
      expect(lines(run.stdout())).toEqual(documentedOutput("batch.ts"));
      expect(lines(run.stdout())).toEqual([
        "FINISHED",
        "Sum started after Numbers finished: true",
        "files on disk while Sum read: 4, 4",
        "files on disk after the job: 0",
        "Sum read 1000000 records, sum 499999500000",
      ]);
    },
    60_000,
  );

  it.each(["tcp", "ws"])(
    "restarts the checkpointed job over %s after its injected failure from a checkpoint whose snapshots are one cut, and counts every record exactly once",
    async (shuffle) => {
      expect(typeCheck?.status, "the examples did not compile").toBe(0);
      const run = start("checkpointed.js", ["-D", `shuffle-service-factory.class=${shuffle}`]);
      expect(await run.exited, run.output()).toBe(0);
      const printed = lines(run.stdout());
      // The checkpoint restored is the newest completed one; its number depends on timing.
      const restored = [...run.stdout().matchAll(/^checkpoint (\d+):/gm)].map((match) => match[1]);
      expect(restored).toHaveLength(2);
      expect(restored[0]).toBe(restored[1]);
      const numbered = (text: string) => text.replace(/^checkpoint \d+:/, "checkpoint N:");
      expect(printed.map(numbered)).toEqual(documentedOutput("checkpointed.ts").map(numbered));
      expect(printed.map(numbered)).toEqual([
        "FINISHED after 1 restart(s)",
        "checkpoint N: the sources had emitted 100000 records",
        "checkpoint N: the sum had counted 100000 records",
        "the sum received 200000 records, sum 19999900000",
      ]);
    },
    60_000,
  );
});
