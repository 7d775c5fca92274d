import { type ChildProcess, spawn } from "node:child_process";
import { waitFor } from "@sluice/core/testing";

/** A child process's output so far, and its end. */
export interface TrackedChildProcess {
  /** Everything it wrote to stdout and stderr so far, interleaved as it arrived. */
  output(): string;
  /** What it wrote to stdout alone so far. */
  stdout(): string;
  /** Resolves with its exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
}

/**
 * Collects what `child` writes (its stdio must be pipes) and keeps it in `running` until it
 * exits, so that a test's clean-up can kill whatever is left.
 */
export function trackChildProcess(
  child: ChildProcess,
  running: Set<ChildProcess>,
): TrackedChildProcess {
  running.add(child);
  let output = "";
  let stdout = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  // "close", not "exit": the output is complete only once the child's pipes have closed too.
  const exited = new Promise<number | null>((resolve) => {
    child.on("close", (code) => {
      running.delete(child);
      resolve(code);
    });
  });
  return { output: () => output, stdout: () => stdout, exited };
}

/** A process of an application installed outside the repository, with its output tracked. */
export type AppProcess = TrackedChildProcess & { readonly child: ChildProcess };

/**
 * Starts `command` in the application folder `app` (stdout and stderr piped and tracked in
 * `running`); `prefix` runs it through another command first (`ip netns exec <host>`).
 */
export function spawnInApp(
  app: string,
  running: Set<ChildProcess>,
  command: readonly string[],
  prefix: readonly string[] = [],
): AppProcess {
  const line = [...prefix, ...command];
  const child = spawn(line[0] as string, line.slice(1), {
    cwd: app,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { child, ...trackChildProcess(child, running) };
}

/**
 * The flags every `sluice` process of a guide's session cluster gets: the application's
 * `sluice.yaml`, the shuffle plugin, and `settings` as `-D key=value`.
 */
export function sessionClusterFlags(
  shuffle: string,
  settings: Readonly<Record<string, string | number>>,
): string[] {
  return [
    "--config",
    "sluice.yaml",
    ...Object.entries({ "shuffle-service-factory.class": shuffle, ...settings }).flatMap(
      ([key, value]) => ["-D", `${key}=${value}`],
    ),
  ];
}

/** Resolves once `jobManager`'s output says `count` task managers registered. */
export function taskManagersRegistered(
  jobManager: TrackedChildProcess,
  count: number,
  timeoutMs = 30_000,
): Promise<void> {
  return waitFor(() => (jobManager.output().match(/ registered$/gm) ?? []).length >= count, {
    what: `${count} task managers to register`,
    timeoutMs,
    intervalMs: 20,
  });
}
