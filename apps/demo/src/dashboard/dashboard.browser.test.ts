/**
 * The dashboard in a real browser: headless Chromium from the system packages (Debian's
 * `chromium`, which CI installs), driven by playwright-core. During a throttled demo run the
 * source vertex must turn HIGH, drop once the throttle is lifted from the page, and the chart
 * must get new points. Screenshots go to apps/demo/test-output/dashboard/.
 */
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { type Browser, chromium } from "playwright-core";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  APP_DIR,
  buildDemoIfStale,
  killDemoProcesses,
  startDemo,
} from "../test-support/demo-process.js";
import { SOURCE_VERTEX } from "../word-count-job.js";

/** Where Chromium may be: `SLUICE_CHROMIUM`, else Debian's and other distributions' paths. */
const CANDIDATES = [
  process.env.SLUICE_CHROMIUM,
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
].filter((candidate): candidate is string => candidate !== undefined && candidate !== "");
const CHROMIUM = CANDIDATES.find((candidate) => existsSync(candidate));

/** The test's output: screenshots of the run. */
const OUTPUT_DIR = path.join(APP_DIR, "test-output/dashboard");

let browser: Browser | undefined;
afterEach(async () => {
  await browser?.close();
  browser = undefined;
  killDemoProcesses();
});

describe("the dashboard in Chromium", () => {
  if (CHROMIUM === undefined) {
    it.skip(`is skipped: no Chromium found at ${CANDIDATES.join(", ")} (apt-get install chromium, or set SLUICE_CHROMIUM)`, () => {});
    return;
  }
  beforeAll(buildDemoIfStale, 300_000);

  it("shows the source HIGH under a throttle, OK once the throttle is lifted from the page, with a growing chart", async () => {
    mkdirSync(OUTPUT_DIR, { recursive: true });
    const demo = startDemo([
      "--records",
      "1m",
      "--duration",
      "12",
      "--throttle",
      "2000",
      "-D",
      "rest.port=0",
    ]);
    let url = "";
    await waitFor(
      () => {
        url = /^dashboard: (\S+)$/m.exec(demo.output().stdout)?.[1] ?? "";
        return url !== "";
      },
      { what: "the dashboard's URL", timeoutMs: 15_000, intervalMs: 50 },
    );

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(url);
    const source = page.locator(`.vertex[data-vertex="${SOURCE_VERTEX}"]`);
    const chart = page.locator("#chart");
    const points = async () => Number(await chart.getAttribute("data-points"));

    await expect
      .poll(() => source.getAttribute("data-backpressure-level"), { timeout: 15_000 })
      .toBe("HIGH");
    expect(await page.locator("#throttle-current").textContent()).toBe("2,000 words/s per counter");
    await expect.poll(points, { timeout: 10_000 }).toBeGreaterThanOrEqual(5);
    await page.screenshot({ path: path.join(OUTPUT_DIR, "dashboard-high.png"), fullPage: true });
    const before = await points();

    await page.click("#throttle-lift");
    await expect
      .poll(() => source.getAttribute("data-backpressure-level"), { timeout: 15_000 })
      .toBe("OK");
    expect(await page.locator("#throttle-current").textContent()).toBe("no throttle");
    await expect.poll(points, { timeout: 5_000 }).toBeGreaterThan(before);
    await page.screenshot({ path: path.join(OUTPUT_DIR, "dashboard-ok.png"), fullPage: true });

    const run = await demo.done;
    expect(run.stdout).toContain("throttle lifted");
    expect(run.stdout).toContain("verified");
    expect(run.code).toBe(0);
    expect(existsSync(path.join(OUTPUT_DIR, "dashboard-high.png"))).toBe(true);
  }, 45_000);
});
