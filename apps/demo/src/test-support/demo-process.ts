/**
 * Runs the compiled demo (`node apps/demo/dist/main.js ...`) and the `sluice` processes as an
 * operator would, for the end-to-end tests, with the harness's tracked processes: child processes
 * run compiled JavaScript, so the demo (and the packages it uses) is built first when stale.
 */
import path from "node:path";
import { SLUICE_MAIN } from "@sluice/cluster";
import { waitFor } from "@sluice/core/testing";
import {
  buildIfStale,
  REPO,
  startProcess,
  type TrackedProcess,
  useTrackedProcesses,
} from "@sluice/harness/testing";
import { beforeAll } from "vitest";

export {
  isAlive,
  killTrackedProcesses,
  lastJsonLine,
  type ProcessRun as Run,
  type TrackedProcess as DemoProcess,
} from "@sluice/harness/testing";
export { REPO };

/** Polls `condition` every 50 ms until it holds (core's `waitFor`); fails after `timeoutMs`. */
export function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  return waitFor(condition, { what, timeoutMs, intervalMs: 50 });
}
/** The demo's compiled entry point. */
export const MAIN = path.join(REPO, "apps/demo/dist/main.js");

/** Demo arguments for up to two restarts, 100 ms apart: enough for every recovery the e2e tests force. */
export const TWO_RESTARTS: readonly string[] = [
  "-D",
  "restart-strategy.type=fixed-delay",
  "-D",
  "restart-strategy.fixed-delay.attempts=2",
  "-D",
  "restart-strategy.fixed-delay.delay=100ms",
];

/** Starts `node main.js <args>` (in `cwd`, through `prefix`, e.g. `ip netns exec <ns>`). */
export function startDemo(
  args: readonly string[],
  options: { cwd?: string; prefix?: readonly string[] } = {},
): TrackedProcess {
  return startProcess([process.execPath, MAIN, ...args], { cwd: REPO, ...options });
}

/** Starts `sluice <args>` as the `sluice` command would (through `prefix`, if given). */
export function startSluice(
  args: readonly string[],
  options: { cwd?: string; prefix?: readonly string[] } = {},
): TrackedProcess {
  return startProcess([process.execPath, SLUICE_MAIN, ...args], { cwd: REPO, ...options });
}

/** Where the word count's job module is: the `--usrlib` of a session cluster's task managers. */
export const USRLIB = path.join(REPO, "apps/demo/dist");

/** A session cluster of `sluice` processes the demo submits to with `--jobmanager`. */
export interface SessionCluster {
  readonly jm: TrackedProcess;
  readonly tms: readonly TrackedProcess[];
  /** The job manager and the task managers. */
  readonly processes: readonly TrackedProcess[];
  /** The job manager's REST port (on `host`). */
  readonly restPort: number;
}

/**
 * Starts `sluice jobmanager` on `host` (control plane on `rpcPort`, REST on `restPort`) and one
 * `sluice taskmanager --usrlib apps/demo/dist` per entry of `taskManagers` (its command prefix,
 * e.g. `ip netns exec <ns>`; two on this host by default), each with `configuration` (`-D`
 * arguments), and resolves once the REST endpoint's `/overview` (fetched by this process, or by
 * `overview` from where the endpoint can be reached) counts every task manager registered: a
 * session cluster refuses a job while none is.
 */
export async function startSessionCluster(options: {
  readonly rpcPort: number;
  readonly restPort: number;
  readonly host?: string;
  readonly configuration?: readonly string[];
  readonly jobManagerPrefix?: readonly string[];
  readonly taskManagers?: readonly (readonly string[])[];
  readonly overview?: (url: string) => unknown;
}): Promise<SessionCluster> {
  const host = options.host ?? "127.0.0.1";
  const configuration = [
    "-D",
    `jobmanager.rpc.address=${host}`,
    "-D",
    `jobmanager.rpc.port=${options.rpcPort}`,
    "-D",
    `rest.address=${host}`,
    "-D",
    `rest.bind-address=${host}`,
    "-D",
    `rest.port=${options.restPort}`,
    ...(options.configuration ?? []),
  ];
  const jm = startSluice(["jobmanager", ...configuration], {
    prefix: options.jobManagerPrefix ?? [],
  });
  const tms = (options.taskManagers ?? [[], []]).map((prefix) =>
    startSluice(["taskmanager", "--usrlib", USRLIB, ...configuration], { prefix }),
  );
  const url = `http://${host}:${options.restPort}/overview`;
  let registered = 0;
  let asking = false;
  // Polled: each call asks the endpoint again once the previous request settled.
  const fetchRegistered = () => {
    if (!asking) {
      asking = true;
      fetch(url)
        .then(async (response) => {
          if (response.ok)
            registered = ((await response.json()) as { taskmanagers: number }).taskmanagers;
        })
        .catch(() => undefined)
        .finally(() => {
          asking = false;
        });
    }
    return registered;
  };
  const taskManagersRegistered =
    options.overview === undefined
      ? fetchRegistered
      : () => (options.overview?.(url) as { taskmanagers?: number } | undefined)?.taskmanagers ?? 0;
  await until(
    () => {
      if (jm.output().code !== null) {
        throw new Error(`the job manager exited (${jm.output().code}):\n${jm.output().stderr}`);
      }
      return taskManagersRegistered() === tms.length;
    },
    30_000,
    "every task manager to register (the REST endpoint's /overview)",
  );
  return { jm, tms, processes: [jm, ...tms], restPort: options.restPort };
}

/** Builds the demo if stale (the packages it runs, the `sluice` processes too). */
export function buildDemoIfStale(): void {
  buildIfStale("@sluice/demo", [
    "apps/demo",
    "apps/corpus",
    "packages/cluster",
    "packages/harness",
  ]);
}

/**
 * The hooks of a test file that starts the demo: build it first if stale, and kill what a test
 * left running after each test.
 */
export function useDemoProcesses(): void {
  beforeAll(buildDemoIfStale, 300_000);
  useTrackedProcesses();
}
