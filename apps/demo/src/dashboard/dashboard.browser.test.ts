/**
 * The dashboard in a real browser: headless Chromium from the system packages (Debian's
 * `chromium`, which CI installs), driven by playwright-core. During a throttled, checkpointed
 * demo run the source vertex must turn HIGH while the throttled counters are marked busy (the
 * bottleneck), the checkpoint view must count completed checkpoints, the chart legend must show
 * values without hovering, the source must drop once the throttle is lifted from the page, and
 * the page must keep the job's final state, FINISHED for the job and every subtask, after the job
 * manager ended. Screenshots go to apps/demo/test-output/dashboard/ (docs/images keeps copies).
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
import { COUNT_VERTEX, SOURCE_VERTEX } from "../word-count-job.js";

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

  it("shows the source HIGH and the throttled counters busy, counts checkpoints, lifts the throttle from the page and keeps FINISHED at the end", async () => {
    mkdirSync(OUTPUT_DIR, { recursive: true });
    const demo = startDemo([
      "--records",
      "1m",
      "--duration",
      "12",
      "--throttle",
      "2000",
      "--checkpoint-interval",
      "500",
      "-D",
      "execution.checkpointing.unaligned.enabled=true",
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
    const counter = page.locator(`.vertex[data-vertex="${COUNT_VERTEX}"]`);
    const chart = page.locator("#chart");
    const points = async () => Number(await chart.getAttribute("data-points"));
    const completed = page.locator('[data-checkpoint="completed"]');
    const favicon = await page.request.get(new URL("favicon.svg", url).toString());
    expect(favicon.headers()["content-type"]).toBe("image/svg+xml");
    expect(await page.locator('link[rel="icon"]').getAttribute("href")).toBe("favicon.svg");

    await expect
      .poll(() => source.getAttribute("data-backpressure-level"), { timeout: 15_000 })
      .toBe("HIGH");
    expect(await source.getAttribute("data-coloured-by")).toBe("back-pressured");
    // The throttled counters wait for neither input nor output: busy, the bottleneck.
    await expect
      .poll(async () => Number(await counter.getAttribute("data-busy")), { timeout: 10_000 })
      .toBeGreaterThan(500);
    expect(await counter.getAttribute("data-coloured-by")).toBe("busy");
    expect(await counter.getAttribute("data-backpressure-level")).toBe("OK");
    expect(await page.locator("#throttle-current").textContent()).toBe("2,000 words/s per counter");
    await expect
      .poll(async () => Number((await completed.textContent()) ?? 0), { timeout: 15_000 })
      .toBeGreaterThanOrEqual(2);
    expect(await page.locator('[data-checkpoint="duration"]').textContent()).toMatch(/^[\d,]+ ms$/);
    expect(await page.locator('[data-checkpoint="size"]').textContent()).toMatch(/\d/);
    await expect.poll(points, { timeout: 10_000 }).toBeGreaterThanOrEqual(5);
    // The legend shows the latest values without the cursor on the chart.
    const legendValues = await page.locator(".u-legend .u-series .u-value").allTextContents();
    expect(legendValues.slice(1).every((value) => /\d/.test(value))).toBe(true);
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
    // The job manager has ended; its last event stays on the page.
    const status = page.locator("#job-status");
    await expect.poll(() => status.getAttribute("data-state"), { timeout: 5_000 }).toBe("FINISHED");
    expect(await status.textContent()).not.toContain("disconnected");
    const states = await page.locator("#subtasks td:nth-child(3)").allTextContents();
    expect(states.length).toBe(4);
    expect(new Set(states)).toEqual(new Set(["FINISHED"]));
    expect(await page.locator("#root-cause").isHidden()).toBe(true);
    await page.screenshot({
      path: path.join(OUTPUT_DIR, "dashboard-finished.png"),
      fullPage: true,
    });
    expect(existsSync(path.join(OUTPUT_DIR, "dashboard-high.png"))).toBe(true);
  }, 60_000);
});
