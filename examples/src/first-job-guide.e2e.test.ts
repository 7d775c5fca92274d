/**
 * The acceptance test of docs/first-job.md, as a user outside this repository would follow it:
 * the packages, `@sluice/datastream` with them, are published to the run's test registry, the
 * guide's files (its code blocks that name a file) are written into an empty folder, installed with
 * pnpm from the run's test registry, type-checked with this repository's TypeScript, and run:
 * the keyed word count in one process, and with the guide's `sluice` processes (a job manager,
 * two task managers, `sluice run`) over TCP and over WebSocket, chosen by configuration only,
 * with one task manager killed once a checkpoint committed output and a replacement started. Each
 * run's output files must hold every word's running counts 1..n exactly once, and no in-progress
 * or pending part file. Last, the same processes on three hosts (network namespaces, where the
 * machine allows them): one session cluster runs the guide's job twice at once and a second job
 * of the user's beside it, a task manager killed meanwhile, every job's output exact.
 */
import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, waitFor } from "@sluice/core/testing";
import { type NamespaceHost, NetworkNamespaces } from "@sluice/harness/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type AppProcess,
  sessionClusterFlags,
  spawnInApp,
  taskManagersRegistered,
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

/** The numbers the second job sums. */
const SUMS_RECORDS = 40_000;
/**
 * A second job of the user's, beside the guide's on one session cluster: the numbers 1..n keyed by
 * their remainder modulo 7, a running sum per key (strictly increasing), into its own folder.
 */
const SUMS_JOB = `import { FileSink, StreamExecutionEnvironment, Types } from "@sluice/datastream";

export const env = StreamExecutionEnvironment.create({ name: "sums", parallelism: 2 });
env
  .fromGenerator(${SUMS_RECORDS}, (i) => i + 1, { name: "Numbers", recordsPerSecond: 10_000 })
  .map((n): [number, number] => [n % 7, n])
  .returns(Types.TUPLE(Types.NUMBER, Types.NUMBER))
  .keyBy(([key]) => key)
  .reduce(([key, a], [, b]) => [key, a + b])
  .sinkTo(new FileSink({ directory: "sums", format: ([key, sum]) => \`\${key} \${sum}\\n\` }));

export default env.toJobModule();
`;

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
  writeFileSync(path.join(app, "sums-job.ts"), SUMS_JOB);
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
  rmSync(path.join(app, "sums"), { recursive: true, force: true });
});

function start(script: string, args: readonly string[]): AppProcess {
  return spawnInApp(app, running, [process.execPath, path.join("dist", script), ...args]);
}

/**
 * The installed `sluice` command of @sluice/cluster, in the application's folder; `prefix` runs
 * it through another command first (`ip netns exec <host>`).
 */
function sluice(...args: string[]): AppProcess {
  return sluiceVia([], ...args);
}

function sluiceVia(prefix: readonly string[], ...args: string[]): AppProcess {
  return spawnInApp(app, running, [path.join(app, "node_modules/.bin/sluice"), ...args], prefix);
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

/**
 * The committed output lines in `folder` (of the job `jobId` only, when given: part files carry
 * their job's id); none of the sink's hidden in-progress or pending files is left.
 */
function outputLines(folder = "out", jobId?: string): string[] {
  const out = path.join(app, folder);
  const files = readdirSync(out);
  expect(files.filter((file) => file.startsWith("."))).toEqual([]);
  return files
    .filter((file) => jobId === undefined || file.includes(`-${jobId}-`))
    .map((file) => readFileSync(path.join(out, file), "utf8"))
    .join("")
    .split("\n")
    .filter((line) => line !== "");
}

function committedFiles(folder = "out"): number {
  try {
    return readdirSync(path.join(app, folder)).filter((file) => !file.startsWith(".")).length;
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
      const config = sessionClusterFlags(shuffle, {
        "jobmanager.rpc.port": rpcPort,
        "rest.port": restPort,
      });
      const jobManager = sluice("jobmanager", ...config);
      const killed = sluice("taskmanager", ...config);
      const survivor = sluice("taskmanager", ...config);
      await taskManagersRegistered(jobManager, 2);
      const run = sluice("run", ...config, "dist/word-count.js");
      await waitFor(() => committedFiles() > 0, {
        what: "a checkpoint to commit a part file",
        timeoutMs: 30_000,
        intervalMs: 20,
      }).catch((error: Error) => {
        throw new Error(
          `${error.message}\nsluice run: ${run.output()}\njob manager: ${jobManager.output()}\ntask managers: ${killed.output()}${survivor.output()}`,
        );
      });
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

describe("the guide's sluice processes on three hosts, one session cluster, outside the repository", () => {
  // Hosts are network namespaces on one bridge (the files stay shared, as a network folder
  // would be): the job manager on the hub, a task manager on each worker.
  let network: NetworkNamespaces | string = "not created";
  beforeAll(() => {
    network = NetworkNamespaces.create({ prefix: "sluice-fj", subnet: "10.83.0", workers: 2 });
  });
  afterAll(() => {
    if (typeof network !== "string") network.remove();
  });

  it.for(["tcp", "ws"])(
    "runs the guide's job twice at once and a second job beside it over %s, a task manager killed mid-way: every job's output exact",
    { timeout: 180_000 },
    async (shuffle, { skip }) => {
      expect(typeCheck?.status, "the example did not compile").toBe(0);
      if (typeof network === "string") return skip(network);
      const { hub, workers } = network;
      const [hostA, hostB] = workers as [NamespaceHost, NamespaceHost];
      const on = (host: NamespaceHost, ...args: string[]) =>
        sluiceVia((network as NetworkNamespaces).prefix(host), ...args);
      const config = sessionClusterFlags(shuffle, {
        "jobmanager.rpc.address": hub.address,
        "rest.bind-address": hub.address,
      });
      const jobManager = on(hub, "jobmanager", ...config);
      const killed = on(hostA, "taskmanager", ...config);
      const survivor = on(hostB, "taskmanager", ...config);
      await taskManagersRegistered(jobManager, 2);
      const runs = [
        on(hub, "run", ...config, "dist/word-count.js"),
        on(hub, "run", ...config, "dist/word-count.js"),
        on(hub, "run", ...config, "dist/sums-job.js"),
      ];
      const everything = () =>
        [jobManager, killed, survivor, ...runs].map((p) => p.output()).join("\n---\n");
      await waitFor(() => committedFiles("out") > 0 && committedFiles("sums") > 0, {
        what: "checkpoints to commit output of both jobs",
        timeoutMs: 60_000,
        intervalMs: 20,
      }).catch((error: Error) => {
        throw new Error(`${error.message}\n${everything()}`);
      });
      killed.child.kill("SIGKILL");
      const replacement = on(hostA, "taskmanager", ...config);
      const jobIds: string[] = [];
      for (const run of runs) {
        expect(await run.exited, everything()).toBe(0);
        expect(run.output()).toMatch(/job [0-9a-f]{32} FINISHED after \d+ restart\(s\)/);
        jobIds.push(/job ([0-9a-f]{32})/.exec(run.output())?.[1] as string);
      }
      expect(new Set(jobIds).size).toBe(3);
      // The killed task manager ran tasks of at least one of them, which restarted.
      expect(runs.some((run) => /FINISHED after [1-9]\d* restart/.test(run.output()))).toBe(true);
      jobManager.child.kill("SIGTERM");
      expect(await jobManager.exited, jobManager.output()).toBe(143);
      for (const taskManager of [survivor, replacement]) {
        expect(await taskManager.exited, taskManager.output()).toBe(0);
      }

      // Both runs of the guide's job: every word's running counts exactly once, each on its own.
      for (const jobId of jobIds.slice(0, 2)) {
        expect(outputLines("out", jobId).sort()).toEqual(expectedLines().sort());
      }
      // The sums: per key, one running sum per number (all different: the numbers are positive),
      // the last one the key's total.
      const sums = new Map<number, number[]>();
      for (const line of outputLines("sums", jobIds[2])) {
        const [key, sum] = line.split(" ").map(Number) as [number, number];
        sums.set(key, [...(sums.get(key) ?? []), sum]);
      }
      expect([...sums.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
      for (const [key, values] of sums) {
        const numbers = Array.from({ length: SUMS_RECORDS }, (_, i) => i + 1).filter(
          (n) => n % 7 === key,
        );
        expect(values.length, `key ${key}`).toBe(numbers.length);
        expect(new Set(values).size, `key ${key}`).toBe(values.length);
        expect(Math.max(...values), `key ${key}`).toBe(numbers.reduce((a, b) => a + b, 0));
      }
    },
  );
});
