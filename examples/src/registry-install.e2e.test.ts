/**
 * Sluice installs like any npm library. The run's test registry (Verdaccio on 127.0.0.1, every
 * publishable package published to it by `pnpm publish`, `test-support/test-registry.ts`) serves
 * the packages by name; an empty project installs them with `npm install` and with pnpm 12's
 * `pnpm add`, as a user types it, and nothing else goes into the project: no tarball, no
 * override, no build-script approval, no registry setting (the test routes the `@sluice` scope to
 * its registry from the environment, as a user's machine reaches the npm registry). The project
 * then compiles a program that imports `JobManager`/`TaskManager` from `@sluice/cluster` and
 * `Configuration`/`JobGraph` from `@sluice/runtime` for NodeNext, and runs its job across two
 * processes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnInApp, trackChildProcess } from "./test-support/child-process-output.js";
import { REPO } from "./test-support/markdown-code-blocks.js";
import {
  installedSluicePackages,
  sluicePackagesNotFromRegistry,
  type TestRegistry,
  testRegistry,
} from "./test-support/test-registry.js";
import { manifestOf, sluiceDependencyClosure } from "./test-support/workspace-packages.js";

const RECORDS = 10_000;
/** What the program imports, and the shuffle plugin its configuration names. */
const DEPENDENCIES = ["cluster", "runtime", "shuffle-tcp"];
/** The plugins a cluster process loads by name: shuffles, high availability, metrics. */
const BUNDLED_PLUGINS = [
  "shuffle-tcp",
  "shuffle-ws",
  "shuffle-remote",
  "ha-etcd",
  "metrics-prometheus",
];
const CLUSTER = manifestOf("cluster");
/** True once `@sluice/cluster` depends on every bundled plugin, so installing it brings them. */
const CLUSTER_BRINGS_PLUGINS = BUNDLED_PLUGINS.every(
  (plugin) => CLUSTER.dependencies?.[`@sluice/${plugin}`] !== undefined,
);
const CLUSTER_HAS_BIN = CLUSTER.bin?.sluice !== undefined;

const CLIENTS = ["npm", "pnpm"] as const;
type Client = (typeof CLIENTS)[number];
/** The command a user types to add packages to a project. */
const ADD: Readonly<Record<Client, readonly string[]>> = {
  npm: ["npm", "install", "--no-audit", "--no-fund"],
  pnpm: ["pnpm", "add"],
};

const APP = `import { JobManager, TaskManager } from "@sluice/cluster";
import { Configuration, JobGraph, TaskExecutor } from "@sluice/runtime";

const records = ${RECORDS};
const [role, ...args] = process.argv.slice(2);
const configuration = Configuration.load({ args });

if (role === "jobmanager") {
  const jobManager = await JobManager.start(configuration);
  console.log(\`job manager on port \${jobManager.port}\`);
  const executor = await TaskExecutor.start(configuration, {
    invokables: {
      produce: async (task) => {
        const writer = task.writer<number>();
        for (let i = 0; i < records; i++) {
          if (!writer.isAvailable()) await writer.getAvailableFuture();
          writer.emit(i);
        }
      },
    },
  });
  const graph = new JobGraph("fresh project");
  const produce = graph.addVertex({ name: "Produce", parallelism: 1, invokable: "produce" });
  const sum = graph.addVertex({ name: "Sum", parallelism: 1, invokable: "sum" });
  graph.connect(produce, sum, { partitioner: { name: "FORWARD" }, serializer: "int32" });
  const [taskManager] = await jobManager.waitForTaskManagers(1);
  if (taskManager === undefined) throw new Error("no task manager registered");
  const execution = await jobManager.deploy(graph, (v) => (v === produce ? executor : taskManager));
  const result = await execution.terminated;
  console.log(result.status, JSON.stringify(result.results.get("Sum")));
  const failed = result.status !== "FINISHED";
  await jobManager.close({ reason: \`the job ended \${result.status}\`, failed });
  await executor.close();
  process.exitCode = failed ? 1 : 0;
} else if (role === "taskmanager") {
  const taskManager = await TaskManager.start(configuration, {
    invokables: {
      sum: async (task) => {
        let total = 0;
        for await (const value of task.reader<number>()) total += value;
        return total;
      },
    },
  });
  const end = await taskManager.terminated;
  console.log(\`task manager ended: \${end.reason}\`);
  process.exitCode = end.failed ? 1 : 0;
} else {
  throw new Error(\`usage: app.js jobmanager|taskmanager [-D key=value]...\`);
}
`;

const TSCONFIG = {
  compilerOptions: {
    target: "ES2023",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    skipLibCheck: true,
    types: ["node"],
    outDir: "dist",
  },
  include: ["*.ts"],
};

interface Step {
  readonly status: number | null;
  readonly output: string;
}

let registry: TestRegistry;
const folders: string[] = [];
const running = new Set<ChildProcess>();

beforeAll(() => {
  registry = testRegistry();
}, 300_000);

afterAll(() => {
  for (const child of running) child.kill("SIGKILL");
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** Runs `command` in `cwd`, installing from the registry; killed after `timeoutMs`. */
async function run(command: readonly string[], cwd: string, timeoutMs = 180_000): Promise<Step> {
  const [file, ...args] = command as [string, ...string[]];
  const child = spawn(file, args, {
    cwd,
    env: { ...process.env, ...registry.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let failed = "";
  child.once("error", (error) => {
    failed = String(error);
  });
  const { exited, output } = trackChildProcess(child, running);
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const status = await exited;
  clearTimeout(timer);
  return { status, output: `${output()}${failed}` };
}

/** An empty project folder, with only its package.json (and the Node types for TypeScript). */
function emptyProject(name: string): string {
  const folder = mkdtempSync(path.join(tmpdir(), `sluice-${name}-`));
  folders.push(folder);
  const manifest = {
    name,
    private: true,
    type: "module",
    devDependencies: { "@types/node": "20.19.43" },
  };
  writeFileSync(path.join(folder, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return folder;
}

/** The names of the Sluice packages of a project's lockfile, sorted. */
function sluicePackages(project: string): string[] {
  return installedSluicePackages(project)
    .map((pkg) => pkg.name)
    .sort();
}

/** Runs `node dist/app.js <role> -D...` in `project`; resolves when it exited. */
function startRole(project: string, role: string, config: Readonly<Record<string, string>>) {
  const args = Object.entries(config).flatMap(([key, value]) => ["-D", `${key}=${value}`]);
  return spawnInApp(project, running, [process.execPath, "dist/app.js", role, ...args]);
}

/** A fresh project with the program, its install by a client, and its compilation. */
interface FreshProject {
  readonly project: string;
  readonly install: Step;
  /** The project folder's entries right after the install. */
  readonly installed: string[];
  readonly compile: Step | undefined;
}

/** Creates a fresh project for `client`, adds the packages with it and compiles the program. */
async function freshProject(client: Client): Promise<FreshProject> {
  const project = emptyProject(`fresh-${client}`);
  writeFileSync(path.join(project, "app.ts"), APP);
  writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
  const install = await run(
    [...ADD[client], ...DEPENDENCIES.map((name) => `@sluice/${name}`)],
    project,
  );
  const installed = readdirSync(project);
  if (install.status !== 0) return { project, install, installed, compile: undefined };
  // The application's own compiler would be its dev dependency; this repository's pinned one
  // is the same version.
  const compile = await run(
    [process.execPath, path.join(REPO, "node_modules/typescript/bin/tsc"), "-p", "."],
    project,
  );
  return { project, install, installed, compile };
}

/**
 * Both clients' fresh projects, set up at once as the file starts: an install mostly waits on
 * the registries, and one client's install does not touch the other's project.
 */
let freshProjects: Map<Client, Promise<FreshProject>> | undefined;
function freshProjectOf(client: Client): Promise<FreshProject> {
  freshProjects ??= new Map(CLIENTS.map((c) => [c, freshProject(c)]));
  return freshProjects.get(client) as Promise<FreshProject>;
}

describe.each(CLIENTS)("a fresh project that adds Sluice with %s", (client) => {
  let project = "";
  let install: Step | undefined;
  let installed: string[] = [];
  let compile: Step | undefined;

  beforeAll(async () => {
    ({ project, install, installed, compile } = await freshProjectOf(client));
  }, 300_000);

  it("installs the packages by name from the registry, with nothing in the project's configuration", () => {
    expect(install?.status, install?.output).toBe(0);
    const manifest = JSON.parse(readFileSync(path.join(project, "package.json"), "utf8"));
    expect(Object.keys(manifest.dependencies).sort()).toEqual(
      DEPENDENCIES.map((name) => `@sluice/${name}`),
    );
    expect(Object.values(manifest.dependencies)).toEqual(
      DEPENDENCIES.map(() => expect.stringMatching(/^\^?\d+\.\d+\.\d+$/)),
    );
    // Only what the install wrote: no .npmrc, no pnpm-workspace.yaml, no tarball.
    const lockfile = client === "npm" ? "package-lock.json" : "pnpm-lock.yaml";
    expect(installed.sort()).toEqual(
      ["app.ts", lockfile, "node_modules", "package.json", "tsconfig.json"].sort(),
    );
    expect(sluicePackages(project)).toEqual(
      sluiceDependencyClosure(DEPENDENCIES).map((name) => `@sluice/${name}`),
    );
    expect(sluicePackagesNotFromRegistry(registry, project)).toEqual([]);
  });

  it("compiles a program that imports JobManager and TaskManager from @sluice/cluster and Configuration and JobGraph from @sluice/runtime, for NodeNext", () => {
    expect(install?.status, "the install failed").toBe(0);
    expect(compile?.output).toBe("");
    expect(compile?.status).toBe(0);
  });

  it("runs the program's job across two processes, a job manager and a task manager, over TCP", async () => {
    expect(compile?.status, "the program did not compile").toBe(0);
    const jobManager = startRole(project, "jobmanager", {
      "shuffle-service-factory.class": "tcp",
      "jobmanager.rpc.address": "127.0.0.1",
      "jobmanager.rpc.port": "0",
      "taskmanager.memory.network.min": "16mb",
    });
    let port = 0;
    await waitFor(
      () => {
        port = Number(/job manager on port (\d+)/.exec(jobManager.output())?.[1] ?? 0);
        return port > 0 || jobManager.child.exitCode !== null;
      },
      { what: "the job manager to listen", timeoutMs: 30_000, intervalMs: 50 },
    );
    const taskManager = startRole(project, "taskmanager", {
      "jobmanager.rpc.address": "127.0.0.1",
      "jobmanager.rpc.port": String(port),
    });
    const [jobManagerCode, taskManagerCode] = await Promise.all([
      jobManager.exited,
      taskManager.exited,
    ]);
    expect(jobManagerCode, jobManager.output()).toBe(0);
    expect(jobManager.output()).toContain(`FINISHED [${(RECORDS * (RECORDS - 1)) / 2}]`);
    expect(taskManagerCode, taskManager.output()).toBe(0);
    expect(taskManager.output()).toContain("task manager ended: shutdown");
  }, 60_000);

  it.runIf(CLUSTER_HAS_BIN)("runs the sluice command of @sluice/cluster: --help", async () => {
    expect(install?.status, "the install failed").toBe(0);
    const help = await run(
      client === "npm"
        ? ["npx", "--no-install", "sluice", "--help"]
        : ["pnpm", "exec", "sluice", "--help"],
      project,
    );
    expect(help.status, help.output).toBe(0);
    expect(help.output).toContain("jobmanager");
    expect(help.output).toContain("taskmanager");
  });
});

describe("every package a cluster process loads by name, installed into a fresh project", () => {
  // Once @sluice/cluster depends on the bundled plugins, adding it alone must bring them all.
  const added = CLUSTER_BRINGS_PLUGINS ? ["cluster"] : ["cluster", ...BUNDLED_PLUGINS];

  it.each(CLIENTS)(
    `%s installs @sluice/cluster and its bundled plugins (${BUNDLED_PLUGINS.join(", ")}) with no entry in the project's configuration`,
    async (client) => {
      const project = emptyProject(`bundled-${client}`);
      const install = await run(
        [...ADD[client], ...added.map((name) => `@sluice/${name}`)],
        project,
      );
      // pnpm exits 1 when a dependency has an install script the project did not approve
      // (ERR_PNPM_IGNORED_BUILDS); a user must not have to approve one to install Sluice.
      expect(install.status, install.output).toBe(0);
      expect(existsSync(path.join(project, "pnpm-workspace.yaml"))).toBe(false);
      expect(existsSync(path.join(project, ".npmrc"))).toBe(false);
      const installed = sluicePackages(project);
      for (const plugin of ["cluster", ...BUNDLED_PLUGINS]) {
        expect(installed).toContain(`@sluice/${plugin}`);
      }
      expect(sluicePackagesNotFromRegistry(registry, project)).toEqual([]);
    },
    240_000,
  );
});
