/**
 * The dashboard page of the job manager's REST endpoint. `#/` lists the jobs (`GET
 * /jobs/overview`, refreshed every `web.refresh-interval`); `#/jobs/<jid>` shows one job from its
 * event stream (`GET /jobs/:jobid/events`): the job graph coloured by busy time and
 * back-pressure, a uPlot chart of throughput and back-pressure with the latest values in its
 * legend, the checkpoint statistics, every subtask's metrics, a form for job messages and a
 * cancel button. When the job ends, its final state stays on the page. Bundled with uPlot by the
 * package's build: no network access.
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import type { CheckpointingStatistics } from "../rest/checkpointing-statistics.js";
import type {
  JobDetailsInfo,
  JobOverviewInfo,
  SubtaskInfo,
  VertexInfo,
} from "../rest/job-details-info.js";
import type { JobMessageReplies } from "../rest/job-message-delivery.js";
import type { JobEvent } from "../rest/rest-routes.js";

/** Points the chart keeps: five minutes at one a second. */
const MAX_POINTS = 300;
const COLORS = ["#1f6feb", "#d32f2f", "#8e44ad", "#e69500", "#2e9e4f"];

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** The states a job ends in: the page stops listening and keeps showing them. */
const FINAL_STATES = new Set(["FINISHED", "FAILED", "CANCELED"]);

function perSecond(value: number): string {
  return integer.format(value);
}

function bytesPerSecond(value: number): string {
  if (value >= 1024 * 1024) return `${(value / (1024 * 1024)).toFixed(1)} MiB`;
  if (value >= 1024) return `${(value / 1024).toFixed(1)} KiB`;
  return `${integer.format(value)} B`;
}

function percent(value: number | null): string {
  return value === null ? "–" : `${Math.round(value * 100)}%`;
}

function msPerSecond(value: number): string {
  return `${integer.format(value)} ms/s`;
}

function bytes(value: number): string {
  return bytesPerSecond(value);
}

function millis(value: number): string {
  return value < 0 ? "–" : `${integer.format(value)} ms`;
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function levelOf(item: VertexInfo | SubtaskInfo): string {
  return item["backpressure-level"].toUpperCase();
}

function levelBadge(item: VertexInfo | SubtaskInfo): HTMLElement {
  const level = levelOf(item);
  return element(
    "span",
    { class: `level level-${level.toLowerCase()}` },
    `${level} ${Math.round(item["backpressured-time-ms-per-second"] / 10)}%`,
  );
}

// ------------------------------------------------------------------------------- jobs list

async function renderJobs(): Promise<void> {
  const response = await fetch("jobs/overview");
  const { jobs } = (await response.json()) as { jobs: JobOverviewInfo[] };
  byId("job-name").textContent = "";
  const running = jobs.filter((job) => !FINAL_STATES.has(job.state)).length;
  byId("job-status").textContent = `${jobs.length} jobs · ${running} running`;
  byId("jobs").replaceChildren(
    element(
      "table",
      { class: "jobs" },
      element(
        "tr",
        {},
        ...["Job", "State", "Started", "Duration", "Tasks", "Id"].map((t) => element("th", {}, t)),
      ),
      ...jobs
        .slice()
        .reverse()
        .map((job) =>
          element(
            "tr",
            { "data-job": job.jid, "data-state": job.state },
            element("td", {}, element("a", { href: `#/jobs/${job.jid}` }, job.name)),
            element("td", {}, job.state),
            element("td", {}, new Date(job["start-time"]).toLocaleTimeString()),
            element("td", {}, `${(job.duration / 1000).toFixed(1)} s`),
            element("td", {}, `${job.tasks.running} running / ${job.tasks.total}`),
            element("td", {}, job.jid),
          ),
        ),
    ),
  );
}

// --------------------------------------------------------------------------------- one job

function renderStatus(job: JobDetailsInfo): void {
  byId("job-name").textContent = `· ${job.name}`;
  const status = byId("job-status");
  status.dataset.state = job.state;
  const counts = job["status-counts"];
  const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
  status.textContent = `${job.state} · ${(job.duration / 1000).toFixed(0)} s · ${counts.RUNNING} of ${total} subtasks running`;
  const cause = byId("root-cause");
  cause.hidden = job["root-cause"] === null;
  cause.textContent = job["root-cause"] === null ? "" : `Root cause: ${job["root-cause"]}`;
}

function renderGraph(job: JobDetailsInfo): void {
  const nodes: Node[] = [];
  job.vertices.forEach((vertex, index) => {
    if (index > 0) {
      const input = job.plan.nodes.find((n) => n.id === vertex.id)?.inputs?.[0];
      nodes.push(
        element(
          "div",
          { class: "edge" },
          element("div", {}, input?.ship_strategy ?? ""),
          element("div", { class: "arrow" }, "→"),
        ),
      );
    }
    nodes.push(
      element(
        "div",
        {
          class: "vertex",
          "data-vertex": vertex.name,
          "data-backpressure-level": levelOf(vertex),
          "data-coloured-by": vertex.colour.by,
          "data-busy": String(Math.round(vertex["busy-time-ms-per-second"])),
          style: `background: ${vertex.colour.background}`,
        },
        element("h3", {}, `${vertex.name} (×${vertex.parallelism})`),
        element(
          "div",
          { class: "metrics" },
          element("div", {}, `${vertex.status} · back-pressure `, levelBadge(vertex)),
          element(
            "div",
            { class: "busy" },
            `Busy ${Math.round(vertex["busy-time-ms-per-second"] / 10)}%`,
          ),
          element(
            "div",
            {},
            `in ${perSecond(vertex["read-records-per-second"])} rec/s · out ${perSecond(vertex["write-records-per-second"])} rec/s`,
          ),
        ),
      ),
    );
  });
  byId("graph").replaceChildren(...nodes);
}

function renderSubtasks(job: JobDetailsInfo): void {
  const tables = job.vertices.map((vertex) =>
    element(
      "table",
      { "data-vertex": vertex.name },
      element("caption", {}, vertex.name),
      element(
        "tr",
        {},
        ...[
          "Subtask",
          "Endpoint",
          "State",
          "Records in",
          "Records out",
          "Records in/s",
          "Records out/s",
          "Bytes in/s",
          "Bytes out/s",
          "Busy",
          "Idle",
          "Back-pressured",
          "In pool",
          "Out pool",
        ].map((title) => element("th", {}, title)),
      ),
      ...vertex.subtasks.map((s) =>
        element(
          "tr",
          {},
          element("td", {}, String(s.subtask)),
          element("td", {}, s.endpoint),
          element("td", {}, s.status),
          element("td", {}, integer.format(s.metrics["read-records"])),
          element("td", {}, integer.format(s.metrics["write-records"])),
          element("td", {}, perSecond(s["read-records-per-second"])),
          element("td", {}, perSecond(s["write-records-per-second"])),
          element("td", {}, `${bytesPerSecond(s["read-bytes-per-second"])}/s`),
          element("td", {}, `${bytesPerSecond(s["write-bytes-per-second"])}/s`),
          element("td", {}, msPerSecond(s["busy-time-ms-per-second"])),
          element("td", {}, msPerSecond(s["idle-time-ms-per-second"])),
          element("td", {}, msPerSecond(s["backpressured-time-ms-per-second"]), " ", levelBadge(s)),
          element("td", {}, percent(s["in-pool-usage"])),
          element("td", {}, percent(s["out-pool-usage"])),
        ),
      ),
    ),
  );
  byId("subtasks").replaceChildren(...tables);
}

function renderCheckpoints(stats: CheckpointingStatistics): void {
  const section = byId("checkpoints");
  if (!stats.enabled) {
    section.replaceChildren(element("p", { class: "legend" }, "The job takes no checkpoints."));
    return;
  }
  const latest = stats.latest.completed;
  const restored = stats.latest.restored;
  const rows: [string, string, string][] = [
    ["Completed", "completed", integer.format(stats.counts.completed)],
    ["Failed", "failed", integer.format(stats.counts.failed)],
    ["In progress", "in-progress", integer.format(stats.counts.in_progress)],
    ["Latest completed", "latest", latest === null ? "–" : `#${latest.id}`],
    ["Duration", "duration", millis(latest?.end_to_end_duration ?? -1)],
    ["Size", "size", latest === null ? "–" : bytes(latest.checkpointed_size)],
    ["Alignment time", "alignment", millis(latest?.alignment_duration ?? -1)],
    [
      "In-flight data (unaligned)",
      "persisted",
      latest === null ? "–" : bytes(latest.persisted_data),
    ],
    [
      "Latest restored",
      "restored",
      restored === null
        ? "none"
        : `#${restored.id} at ${new Date(restored.restore_timestamp).toLocaleTimeString()}`,
    ],
  ];
  section.replaceChildren(
    element(
      "table",
      { class: "checkpoints" },
      ...rows.map(([title, key, value]) =>
        element(
          "tr",
          {},
          element("th", {}, title),
          element("td", { "data-checkpoint": key }, value),
        ),
      ),
    ),
  );
}

/** The chart: records per second into the last vertex, and each vertex's back-pressure in %. */
class ThroughputChart {
  private readonly data: number[][];
  private readonly plot: uPlot;
  private readonly container = byId("chart");

  constructor(vertices: readonly VertexInfo[]) {
    this.data = [[], [], ...vertices.map(() => [])];
    const width = () => Math.max(320, this.container.clientWidth - 16);
    this.plot = new uPlot(
      {
        width: width(),
        height: 280,
        scales: { x: { time: true }, pct: { range: [0, 100] } },
        series: [
          {},
          {
            label: "records/s",
            scale: "rps",
            stroke: COLORS[0] as string,
            width: 2,
            value: (_u, v) => (v == null ? "–" : perSecond(v)),
          },
          ...vertices.map((vertex, i) => ({
            label: `${vertex.name} back-pressure`,
            scale: "pct",
            stroke: COLORS[(i + 1) % COLORS.length] as string,
            dash: [6, 4],
            value: (_u: uPlot, v: number | null) => (v == null ? "–" : `${Math.round(v)}%`),
          })),
        ],
        axes: [
          {},
          { scale: "rps", label: "records/s", size: 70 },
          { scale: "pct", side: 1, label: "back-pressured %", grid: { show: false } },
        ],
      },
      this.data as uPlot.AlignedData,
      this.container,
    );
    window.addEventListener("resize", () => this.plot.setSize({ width: width(), height: 280 }));
  }

  add(job: JobDetailsInfo): void {
    const last = job.vertices[job.vertices.length - 1];
    const values = [
      Date.now() / 1000,
      last?.["read-records-per-second"] ?? 0,
      ...job.vertices.map((v) => v["backpressured-time-ms-per-second"] / 10),
    ];
    values.forEach((value, i) => {
      const series = this.data[i] as number[];
      series.push(value);
      if (series.length > MAX_POINTS) series.shift();
    });
    this.plot.setData(this.data as uPlot.AlignedData);
    const count = (this.data[0] as number[]).length;
    // The legend shows the latest values, unless the cursor points at other ones.
    if (this.plot.cursor.left === undefined || this.plot.cursor.left < 0) {
      this.plot.setLegend({ idx: count - 1 });
    }
    this.container.dataset.points = String(count);
  }
}

/** What one job's view holds while it is shown. */
interface JobView {
  readonly jid: string;
  readonly events: EventSource;
  chart: ThroughputChart | undefined;
  ended: boolean;
}

let view: JobView | undefined;
let listTimer: number | undefined;

function renderJob(current: JobView, event: JobEvent): void {
  renderStatus(event.job);
  renderGraph(event.job);
  renderCheckpoints(event.checkpoints);
  renderSubtasks(event.job);
  current.chart ??= new ThroughputChart(event.job.vertices);
  current.chart.add(event.job);
  if (FINAL_STATES.has(event.job.state)) {
    // The job manager sends the final state last: keep it, and stop listening.
    current.ended = true;
    current.events.close();
    for (const id of ["message-name", "message-payload", "message-send", "job-cancel"]) {
      byId<HTMLInputElement | HTMLButtonElement>(id).disabled = true;
    }
  }
}

function showJob(jid: string): void {
  byId("jobs-view").hidden = true;
  byId("job-view").hidden = false;
  byId("chart").replaceChildren();
  byId("chart").dataset.points = "0";
  byId("message-replies").replaceChildren();
  for (const id of ["message-name", "message-payload", "message-send", "job-cancel"]) {
    byId<HTMLInputElement | HTMLButtonElement>(id).disabled = false;
  }
  const events = new EventSource(`jobs/${encodeURIComponent(jid)}/events`);
  const current: JobView = { jid, events, chart: undefined, ended: false };
  view = current;
  events.onmessage = (message) =>
    renderJob(current, JSON.parse(message.data as string) as JobEvent);
  events.onerror = () => {
    // A stream the endpoint ended or reset (rest.event-streams.max-bytes) reconnects by itself.
    if (current.ended || view !== current || events.readyState !== EventSource.CLOSED) return;
    byId("job-status").textContent +=
      " · disconnected (the job manager has ended, or serves too many pages)";
  };
}

async function sendMessage(): Promise<void> {
  const current = view;
  if (current === undefined) return;
  const name = byId<HTMLInputElement>("message-name").value.trim();
  const text = byId<HTMLInputElement>("message-payload").value.trim();
  const replies = byId("message-replies");
  let payload: unknown = null;
  try {
    payload = text === "" ? null : JSON.parse(text);
  } catch (error) {
    replies.replaceChildren(
      element("div", { class: "error" }, `not JSON: ${(error as Error).message}`),
    );
    return;
  }
  const response = await fetch(
    `jobs/${encodeURIComponent(current.jid)}/messages/${encodeURIComponent(name)}`,
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(payload),
    },
  );
  const body = (await response.json()) as Partial<JobMessageReplies> & { errors?: string[] };
  replies.dataset.status = String(response.status);
  replies.replaceChildren(
    ...(body.replies ?? []).map((reply) =>
      element(
        "div",
        {
          class: reply.error === undefined ? "reply" : "reply error",
          "data-endpoint": reply.endpoint,
        },
        `${reply.endpoint}: ${reply.error === undefined ? JSON.stringify(reply.reply) : reply.error.message}`,
      ),
    ),
    ...(body.replies === undefined
      ? (body.errors ?? []).map((e) => element("div", { class: "error" }, e))
      : []),
  );
}

async function cancelJob(): Promise<void> {
  const current = view;
  if (current === undefined) return;
  const response = await fetch(`jobs/${encodeURIComponent(current.jid)}?mode=cancel`, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
  });
  if (!response.ok) {
    const { errors } = (await response.json()) as { errors?: string[] };
    byId("message-replies").replaceChildren(
      element("div", { class: "error" }, errors?.join("; ") ?? `HTTP ${response.status}`),
    );
  }
}

function route(): void {
  view?.events.close();
  view = undefined;
  window.clearInterval(listTimer);
  byId("root-cause").hidden = true;
  const match = /^#\/jobs\/([^/]+)$/.exec(window.location.hash);
  if (match !== null) {
    showJob(decodeURIComponent(match[1] as string));
    return;
  }
  byId("job-view").hidden = true;
  byId("jobs-view").hidden = false;
  void fetch("config")
    .then((response) => response.json() as Promise<{ "refresh-interval": number }>)
    .then((config) => {
      void renderJobs();
      listTimer = window.setInterval(() => void renderJobs(), config["refresh-interval"]);
    });
}

byId<HTMLFormElement>("message-form").addEventListener("submit", (event) => {
  event.preventDefault();
  void sendMessage();
});
byId("job-cancel").addEventListener("click", () => void cancelJob());
window.addEventListener("hashchange", route);
route();
