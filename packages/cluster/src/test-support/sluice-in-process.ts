import { PassThrough } from "node:stream";
import { runSluice } from "../cli/main.js";

/** What one `sluice` command run in this process ended with and wrote. */
export interface SluiceRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `sluice` in this process and collects what it writes. */
export async function sluiceInProcess(...argv: string[]): Promise<SluiceRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  stdout.on("data", (chunk) => out.push(String(chunk)));
  stderr.on("data", (chunk) => err.push(String(chunk)));
  const code = await runSluice(argv, { stdout, stderr });
  return { code, stdout: out.join(""), stderr: err.join("") };
}
