import { ConfigurationError, ErrorCodes } from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { Configuration, isJobModule, JobID } from "@sluice/runtime";
import { ResultPartitionType } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import wordCount, { COUNT_VERTEX, SOURCE_VERTEX, THROTTLE_MESSAGE } from "./word-count-job.js";
import { wordCountArgs, wordCountOptionsOf } from "./word-count-options.js";

const configuration = new Configuration();

describe("the word count's job module", () => {
  it("is a job module whose graph its arguments build, as sluice run passes them", async () => {
    expect(isJobModule(wordCount)).toBe(true);
    const graph = await wordCount.createJobGraph({
      args: ["--records", "2m", "--parallelism", "3", "--mode", "batch", "--throttle", "20k"],
      configuration,
    });
    const [source, count] = graph.vertices;
    expect(source).toMatchObject({ name: SOURCE_VERTEX, parallelism: 3, invokable: "source" });
    expect(source?.configuration).toEqual({
      corpus: { seed: 42, records: 2_000_000, parallelism: 3 },
    });
    expect(count).toMatchObject({ name: COUNT_VERTEX, parallelism: 3, invokable: "count" });
    expect(count?.configuration).toEqual({ throttle: 20_000 });
    expect(graph.edges[0]?.partitionType).toBe(ResultPartitionType.BLOCKING);
    const streaming = await wordCount.createJobGraph({
      args: ["--output", "out", "--duration", "10", "--records", "1000"],
      configuration,
    });
    expect(streaming.edges[0]?.partitionType).toBe(ResultPartitionType.PIPELINED_BOUNDED);
    expect(streaming.vertices[0]?.configuration.pace).toBe(1000 / 2 / 10);
    expect(streaming.vertices[1]?.configuration.sink).toEqual({
      directory: expect.stringMatching(/\/out$/),
    });
  });

  it("reads back the arguments the demo builds from its options", () => {
    const options = wordCountOptionsOf({ records: "5k", mode: "batch", throttle: "7" });
    expect(wordCountOptionsOf(Object.fromEntries(pairs(wordCountArgs(options))))).toEqual(options);
  });

  it("refuses an unknown argument or a bad value as a configuration error, naming it", () => {
    expectError(
      () => wordCount.createJobGraph({ args: ["--recrds", "5"], configuration }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      "the word count's arguments: Unknown option '--recrds'",
    );
    expectError(
      () => wordCount.createJobGraph({ args: ["--parallelism", "0"], configuration }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      "--parallelism must be between 1 and 256, got 0",
    );
  });

  it("answers the job message throttle with the limit it set, and refuses a malformed one", async () => {
    const handler = wordCount.userCode.messages?.[THROTTLE_MESSAGE];
    const context = { jobId: new JobID() };
    expect(await handler?.({ recordsPerSecond: 5 }, context)).toEqual({ recordsPerSecond: 5 });
    expect(await handler?.({ recordsPerSecond: null }, context)).toEqual({
      recordsPerSecond: null,
    });
    expect(() => handler?.({ recordsPerSecond: 0 }, context)).toThrow(/throttle expects/);
  });
});

/** `--key value` pairs as parseArgs values. */
function pairs(args: readonly string[]): [string, string][] {
  const entries: [string, string][] = [];
  for (let i = 0; i < args.length; i += 2) {
    entries.push([(args[i] as string).slice(2), args[i + 1] as string]);
  }
  return entries;
}
