import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseCli, UsageError } from "./cli.js";
import { readCommittedOutput } from "./sink-options.js";

function usageError(argv: string[]): string {
  try {
    parseCli(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`${argv.join(" ")} was accepted`);
}

describe("--sink files --output <dir>", () => {
  it("is parsed with an absolute output folder", () => {
    expect(
      parseCli(["--checkpoint-interval", "200", "--sink", "files", "--output", "out"]),
    ).toMatchObject({ sink: "files", output: path.resolve("out") });
    expect(parseCli([])).toMatchObject({ sink: undefined, output: undefined });
  });

  it("names what is missing or wrong", () => {
    expect(usageError(["--sink", "kafka"])).toBe('--sink expects files, got "kafka"');
    expect(usageError(["--checkpoint-interval", "200", "--sink", "files"])).toMatch(
      /^--sink files needs --output <dir>/,
    );
    expect(usageError(["--sink", "files", "--output", "out"])).toMatch(
      /^--sink files needs --checkpoint-interval/,
    );
    expect(usageError(["--output", "out"])).toBe(
      "--output applies to --sink files only (see --help)",
    );
    expect(usageError(["--mode", "batch", "--sink", "files", "--output", "out"])).toMatch(
      /^--sink files applies to --mode streaming only/,
    );
  });
});

describe("readCommittedOutput", () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "sluice-committed-output-"));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("sums each subtask's committed lines and names leftover and foreign files", async () => {
    // Part files are named <prefix>-<job id>-<leadership epoch>-<attempt>-<n>.
    const job = "0123456789abcdef0123456789abcdef";
    await writeFile(path.join(directory, `part-0-${job}-7-0-0`), "a\t2\nb\t1\n");
    await writeFile(path.join(directory, `part-0-${job}-9-0-0`), "a\t3\n");
    await writeFile(path.join(directory, `part-1-${job}-7-0-0`), "c\t5\nbroken line\n");
    await writeFile(path.join(directory, `.part-1-${job}-7-0-1.pending`), "c\t1\n");
    await mkdir(path.join(directory, "notes"));
    const output = await readCommittedOutput(directory, 2);
    expect(output.countsBySubtask).toEqual([
      new Map([
        ["a", 5],
        ["b", 1],
      ]),
      new Map([["c", 5]]),
    ]);
    expect(output.committedFiles).toBe(3);
    expect(output.committedBytes).toBe(8 + 4 + 16);
    expect(output.differences).toEqual([
      `1 in-progress or pending part file(s) left in ${directory}: .part-1-${job}-7-0-1.pending`,
      `${path.join(directory, "notes")} is not a part file of a count subtask`,
      `part-1-${job}-7-0-0: not a "word<TAB>count" line: "broken line"`,
    ]);
  });
});
