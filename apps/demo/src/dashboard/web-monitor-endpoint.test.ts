import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConfigurationError } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { backPressureLevel } from "./backpressure-level.js";
import type { JobOverview } from "./job-overview.js";
import { WebMonitorEndpoint, type WebMonitorOptions } from "./web-monitor-endpoint.js";

const staticDir = mkdtempSync(path.join(tmpdir(), "sluice-dashboard-"));
writeFileSync(path.join(staticDir, "index.html"), "<!doctype html><title>dashboard</title>");
writeFileSync(path.join(staticDir, "app.js"), "console.log('app')");
afterAll(() => rmSync(staticDir, { recursive: true, force: true }));

const OVERVIEW: JobOverview = {
  job: {
    name: "word count",
    state: "RUNNING",
    rootCause: null,
    elapsedSeconds: 3,
    totalRecords: 100,
    records: 40,
    throttle: null,
    shuffle: "tcp",
  },
  vertices: [],
  checkpoints: null,
  edges: [],
};

const endpoints: WebMonitorEndpoint[] = [];
afterEach(async () => {
  await Promise.all(endpoints.splice(0).map((endpoint) => endpoint.close()));
});

async function start(options: Partial<WebMonitorOptions> = {}) {
  const throttles: (number | null)[] = [];
  const warnings: string[] = [];
  const endpoint = await WebMonitorEndpoint.start({
    host: "127.0.0.1",
    port: 0,
    portIsExplicit: true,
    staticDir,
    overview: () => OVERVIEW,
    onThrottle: (value) => throttles.push(value),
    onWarning: (message) => warnings.push(message),
    ...options,
  });
  endpoints.push(endpoint);
  return { endpoint, throttles, warnings };
}

/** A port some other server holds, for the time of `use`. */
async function withTakenPort(use: (port: number) => Promise<void>): Promise<void> {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  try {
    await use((holder.address() as { port: number }).port);
  } finally {
    holder.close();
  }
}

describe("the dashboard's web endpoint", () => {
  it("serves the page, the overview as JSON and as Server-Sent Events", async () => {
    const { endpoint } = await start();
    expect(endpoint.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(endpoint.url);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain("<title>dashboard</title>");
    expect((await fetch(new URL("app.js", endpoint.url))).headers.get("content-type")).toContain(
      "text/javascript",
    );
    expect((await fetch(new URL("missing.js", endpoint.url))).status).toBe(404);
    expect(await (await fetch(new URL("api/overview", endpoint.url))).json()).toEqual(OVERVIEW);

    const events = await fetch(new URL("api/events", endpoint.url));
    expect(events.headers.get("content-type")).toBe("text/event-stream");
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!text.includes("data: ")) text += new TextDecoder().decode((await reader.read()).value);
    while (!text.endsWith("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
    const data = text.split("\n").find((line) => line.startsWith("data: ")) as string;
    expect(JSON.parse(data.slice("data: ".length))).toEqual(OVERVIEW);
    await reader.cancel();
  });

  it("sends every open page the final overview when it closes, so the page keeps the job's end", async () => {
    let overview: JobOverview = OVERVIEW;
    const { endpoint } = await start({ overview: () => overview });
    const events = await fetch(new URL("api/events", endpoint.url));
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!text.includes("data: ")) text += new TextDecoder().decode((await reader.read()).value);
    const failed: JobOverview = {
      ...OVERVIEW,
      job: { ...OVERVIEW.job, state: "FAILED", rootCause: "Count (1/2)#0: broke on purpose" },
    };
    overview = failed;
    const closed = endpoint.close();
    // The stream ends after the last event: read everything up to its end.
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += new TextDecoder().decode(chunk.value);
    }
    await closed;
    const data = text.split("\n").filter((line) => line.startsWith("data: "));
    expect(JSON.parse((data.at(-1) as string).slice("data: ".length))).toEqual(failed);
  });

  it("sets and lifts the throttle with POST /throttle and refuses anything else, saying what it expects", async () => {
    const { endpoint, throttles } = await start();
    const post = (body: string) =>
      fetch(new URL("throttle", endpoint.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    expect((await post('{"recordsPerSecond":2500}')).status).toBe(200);
    expect((await post('{"recordsPerSecond":null}')).status).toBe(200);
    for (const bad of [
      '{"recordsPerSecond":-1}',
      '{"recordsPerSecond":"fast"}',
      '{"recordsPerSecond":1e-300}',
      '{"recordsPerSecond":0.5}',
      "{}",
      "x",
    ]) {
      const refused = await post(bad);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: string }).error).toContain(
        'POST /throttle expects {"recordsPerSecond"',
      );
    }
    expect(throttles).toEqual([2500, null]);
    expect((await fetch(new URL("api/overview", endpoint.url), { method: "PUT" })).status).toBe(
      405,
    );
  });

  it("refuses POST /throttle from another site, to another Host, or without a JSON content type", async () => {
    const { endpoint, throttles, warnings } = await start();
    const { port } = new URL(endpoint.url);
    /** A raw request, so that the test sets Host and Origin as a hostile page would get them. */
    const post = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpRequest(
          { host: "127.0.0.1", port, path: "/throttle", method: "POST", headers },
          (response) => {
            let body = "";
            response.on("data", (chunk) => {
              body += String(chunk);
            });
            response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
          },
        );
        request.on("error", reject);
        request.end('{"recordsPerSecond":5}');
      });
    const json = { "content-type": "application/json" };
    // A form or no-cors fetch of another site: text/plain, with that site's Origin.
    const crossSite = await post({ "content-type": "text/plain", origin: "http://evil.example" });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body).toContain("the request comes from");
    expect(crossSite.body).toContain("http://evil.example");
    expect((await post({ ...json, origin: "http://evil.example" })).status).toBe(403);
    // The page's own origin, but the body not declared JSON.
    const plain = await post({ "content-type": "text/plain", origin: `http://127.0.0.1:${port}` });
    expect(plain.status).toBe(415);
    // DNS rebinding: a name of the attacker's that resolves to loopback.
    const rebound = await post({ ...json, host: `evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toContain("is not this dashboard's address");
    expect((await post({ ...json, host: `127.0.0.1:${Number(port) + 1}` })).status).toBe(403);
    expect(throttles).toEqual([]);
    expect(warnings.filter((w) => w.startsWith("refused POST /throttle"))).toHaveLength(5);
    // The dashboard's own page, and a local tool without an Origin, may.
    expect((await post({ ...json, origin: `http://127.0.0.1:${port}` })).status).toBe(200);
    expect((await post({ ...json, host: `localhost:${port}` })).status).toBe(200);
    expect(throttles).toEqual([5, 5]);
  });

  it("fails to start on a taken rest.port set by the user, naming the key", async () => {
    await withTakenPort(async (port) => {
      await expectRejection(
        start({ port }),
        ConfigurationError,
        "SLUICE_ERR_CONFIG",
        `127.0.0.1:${port} (rest.port)`,
      );
    });
  });

  it("takes a free port, with a warning, when the default port is taken", async () => {
    await withTakenPort(async (port) => {
      const { endpoint, warnings } = await start({ port, portIsExplicit: false });
      expect(endpoint.url).not.toContain(`:${port}/`);
      expect(warnings).toEqual([
        `the dashboard's default port ${port} is taken; using a free port (set rest.port to choose one)`,
      ]);
    });
  });

  it("grades back-pressure with Flink's thresholds: OK up to 10 %, LOW up to 50 %, HIGH above", () => {
    expect([0, 100, 101, 500, 501, 1000].map(backPressureLevel)).toEqual([
      "OK",
      "OK",
      "LOW",
      "LOW",
      "HIGH",
      "HIGH",
    ]);
  });
});
