/**
 * The dashboard in a real browser: headless Chromium from the system packages (Debian's
 * `chromium`, which CI installs), driven by playwright-core. On an in-process cluster running a
 * job whose sinks are throttled by a job message, the jobs list links to the job; there the
 * numbers vertex must turn HIGH while the throttled sinks are busy (the bottleneck), the
 * checkpoint view must count completed checkpoints, the chart legend must show values without
 * hovering, the job message sent from the page's form must lift the throttle on every task
 * manager (their replies shown), and the page must keep the job's final state, FINISHED for the
 * job and every subtask, after it ended. Screenshots go to packages/cluster/test-output/web-dashboard/
 * (docs/images/dashboard.png is a copy of the first).
 */
import { existsSync, mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { ratedJob, ratedUserCode } from "../test-support/rated-job.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "../test-support/test-cluster.js";
import { WebMonitorEndpoint } from "./web-monitor-endpoint.js";

/** Where Chromium may be: `SLUICE_CHROMIUM`, else Debian's and other distributions' paths. */
const CANDIDATES = [
  process.env.SLUICE_CHROMIUM,
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
].filter((candidate): candidate is string => candidate !== undefined && candidate !== "");
const CHROMIUM = CANDIDATES.find((candidate) => existsSync(candidate));

/** The test's output: screenshots of the run. */
const OUTPUT_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../test-output/web-dashboard",
);

let browser: Browser | undefined;
let checkpointsDir: string | undefined;
const endpoints: WebMonitorEndpoint[] = [];
afterEach(async () => {
  await browser?.close();
  browser = undefined;
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
  await closeTestCluster();
  if (checkpointsDir !== undefined) await rm(checkpointsDir, { recursive: true, force: true });
});

describe("the web dashboard in Chromium", () => {
  if (CHROMIUM === undefined) {
    it.skip(`is skipped: no Chromium found at ${CANDIDATES.join(", ")} (apt-get install chromium, or set SLUICE_CHROMIUM)`, () => {});
    return;
  }

  it("lists the job, shows the numbers HIGH and the throttled sinks busy, counts checkpoints, lifts the throttle with a job message and keeps FINISHED at the end", async () => {
    mkdirSync(OUTPUT_DIR, { recursive: true });
    checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-dashboard-"));
    const jobManager = await startJobManager({
      "rest.port": 0,
      "web.refresh-interval": "500ms",
      "metrics.fetcher.update-interval": "250ms",
      "state.checkpoints.dir": checkpointsDir,
      "execution.checkpointing.interval": "500ms",
      "execution.checkpointing.unaligned.enabled": true,
    });
    for (let i = 0; i < 2; i++) await startTaskManager(jobManager, {}, ratedUserCode(2_000));
    await jobManager.waitForTaskManagers(2, 10_000);
    const endpoint = await WebMonitorEndpoint.start(jobManager);
    endpoints.push(endpoint);
    const execution = await jobManager.deploy(ratedJob("rated numbers", 300_000));
    const jid = execution.jobId.toString();

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(endpoint.url);
    const favicon = await page.request.get(new URL("favicon.svg", endpoint.url).toString());
    expect(favicon.headers()["content-type"]).toBe("image/svg+xml");
    const row = page.locator(`tr[data-job="${jid}"]`);
    await expect.poll(() => row.getAttribute("data-state"), { timeout: 10_000 }).toBe("RUNNING");
    await row.locator("a").click();
    expect(new URL(page.url()).hash).toBe(`#/jobs/${jid}`);

    const numbers = page.locator('.vertex[data-vertex="Numbers"]');
    const sink = page.locator('.vertex[data-vertex="Sink"]');
    const chart = page.locator("#chart");
    const points = async () => Number(await chart.getAttribute("data-points"));
    const completed = page.locator('[data-checkpoint="completed"]');
    await expect
      .poll(() => numbers.getAttribute("data-backpressure-level"), { timeout: 20_000 })
      .toBe("HIGH");
    // The throttled sinks wait for neither input nor output: busy, the bottleneck.
    await expect
      .poll(async () => Number(await sink.getAttribute("data-busy")), { timeout: 10_000 })
      .toBeGreaterThan(500);
    expect(await sink.getAttribute("data-coloured-by")).toBe("busy");
    expect(await sink.getAttribute("data-backpressure-level")).toBe("OK");
    await expect
      .poll(async () => Number((await completed.textContent()) ?? 0), { timeout: 15_000 })
      .toBeGreaterThanOrEqual(2);
    expect(await page.locator('[data-checkpoint="duration"]').textContent()).toMatch(/^[\d,]+ ms$/);
    await expect.poll(points, { timeout: 10_000 }).toBeGreaterThanOrEqual(5);
    // The legend shows the latest values without the cursor on the chart.
    const legendValues = await page.locator(".u-legend .u-series .u-value").allTextContents();
    expect(legendValues.slice(1).every((value) => /\d/.test(value))).toBe(true);
    await page.screenshot({ path: path.join(OUTPUT_DIR, "dashboard-high.png"), fullPage: true });

    // The job message from the page's form reaches both task managers.
    await page.fill("#message-name", "rate");
    await page.fill("#message-payload", '{"recordsPerSecond": null}');
    await page.click("#message-send");
    const replies = page.locator("#message-replies .reply");
    await expect.poll(() => replies.count(), { timeout: 10_000 }).toBe(2);
    for (const reply of await replies.allTextContents()) {
      expect(reply).toMatch(/^127\.0\.0\.1:\d+: \{"recordsPerSecond":null\}$/);
    }

    expect((await execution.terminated).status).toBe("FINISHED");
    // The job's last event stays on the page.
    const status = page.locator("#job-status");
    await expect
      .poll(() => status.getAttribute("data-state"), { timeout: 10_000 })
      .toBe("FINISHED");
    const states = await page.locator("#subtasks td:nth-child(3)").allTextContents();
    expect(states).toEqual(["FINISHED", "FINISHED", "FINISHED", "FINISHED"]);
    expect(await page.locator("#root-cause").isHidden()).toBe(true);
    expect(await page.locator("#message-send").isDisabled()).toBe(true);
    await page.screenshot({
      path: path.join(OUTPUT_DIR, "dashboard-finished.png"),
      fullPage: true,
    });
  }, 90_000);
});
