import type { ChildProcess } from "node:child_process";

/** A child process's output so far, and its end. */
export interface TrackedChildProcess {
  /** Everything it wrote to stdout and stderr so far, interleaved as it arrived. */
  output(): string;
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
  const append = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  // "close", not "exit": the output is complete only once the child's pipes have closed too.
  const exited = new Promise<number | null>((resolve) => {
    child.on("close", (code) => {
      running.delete(child);
      resolve(code);
    });
  });
  return { output: () => output, exited };
}
