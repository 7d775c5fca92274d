import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));
/** The working plugin the broken ones decorate: the TCP plugin of this repository, built. */
const INNER_PLUGIN = `${path.join(PACKAGE_DIR, "../shuffle-tcp/dist/index.js")}#TcpShuffleServiceFactory`;
/** vitest's command-line entry, next to its package.json. */
const VITEST = path.join(
  path.dirname(createRequire(import.meta.url).resolve("vitest/package.json")),
  "vitest.mjs",
);

interface CaseResult {
  readonly title: string;
  readonly status: string;
}

/**
 * Runs the suite's cases whose names match `pattern` against `plugin` in a vitest process of its
 * own, and returns how each ended.
 */
function runSuite(plugin: string, pattern: string): Promise<CaseResult[]> {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-tck-self-test-"));
  const report = path.join(dir, "report.json");
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [
        VITEST,
        "run",
        "--config",
        "vitest.self-test.config.ts",
        "--testNamePattern",
        pattern,
        "--reporter=json",
        `--outputFile=${report}`,
      ],
      {
        cwd: PACKAGE_DIR,
        env: {
          ...process.env,
          SLUICE_TCK_BROKEN_PLUGIN: plugin,
          SLUICE_TCK_INNER_PLUGIN: INNER_PLUGIN,
          SLUICE_TCK_RECORDS: "20000",
        },
        timeout: 120_000,
      },
      (error) => {
        try {
          const json = JSON.parse(readFileSync(report, "utf8")) as {
            testResults: { assertionResults: CaseResult[] }[];
          };
          resolve(
            json.testResults
              .flatMap((file) => file.assertionResults)
              .filter((result) => result.status !== "skipped" && result.status !== "pending"),
          );
        } catch (cause) {
          reject(
            new Error(`the self-test's vitest run wrote no report: ${error?.message}`, { cause }),
          );
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );
  });
}

const EXACTLY_ONCE = "delivers keyed records exactly once and in order per channel";
const LONE_RECORD = "delivers a lone record within the buffer timeout";

/** Each broken plugin, and the case that must catch it. */
const BROKEN = [
  { plugin: "DroppingShuffleServiceFactory", breaks: "drops records", catchers: EXACTLY_ONCE },
  {
    plugin: "DuplicatingShuffleServiceFactory",
    breaks: "duplicates records",
    catchers: EXACTLY_ONCE,
  },
  { plugin: "ReorderingShuffleServiceFactory", breaks: "reorders records", catchers: EXACTLY_ONCE },
  { plugin: "NonFlushingShuffleServiceFactory", breaks: "never flushes", catchers: LONE_RECORD },
  {
    plugin: "NeverClosingShuffleServiceFactory",
    breaks: "never releases its data server",
    catchers: EXACTLY_ONCE,
  },
] as const;

// Each case is a vitest process of its own, mostly waiting on its worker processes: they run at
// once.
describe.concurrent("the conformance suite checked against deliberately broken plugins", () => {
  it("passes those cases with the working plugin the broken ones decorate", async () => {
    const results = await runSuite("none", `${EXACTLY_ONCE}|${LONE_RECORD}`);
    expect(results).toHaveLength(2);
    for (const result of results) expect(result, result.title).toMatchObject({ status: "passed" });
  }, 120_000);

  for (const { plugin, breaks, catchers } of BROKEN) {
    it(`fails "${catchers}" for a plugin that ${breaks}`, async () => {
      const results = await runSuite(plugin, catchers);
      expect(results).toHaveLength(1);
      expect(results[0]?.status).toBe("failed");
    }, 120_000);
  }
});
