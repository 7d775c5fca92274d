/**
 * The dashboard page: renders the job manager's overview (`GET /api/events`, once a second) as
 * the job graph coloured by busy time and back-pressure, a uPlot chart of throughput and
 * back-pressure with the latest values in its legend, the checkpoint statistics, and a table of
 * every subtask's metrics. When the job ends, its final state stays on the page. Bundled with
 * uPlot by the demo's build: no network access.
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import type { JobOverview, SubtaskOverview, VertexOverview } from "../job-overview.js";

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
  if (value < 0) return "–";
  return bytesPerSecond(value).replace(/\/s$/, "");
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

function levelBadge(vertex: VertexOverview | SubtaskOverview): HTMLElement {
  const level = vertex.backPressureLevel;
  return element(
    "span",
    { class: `level level-${level.toLowerCase()}` },
    `${level} ${Math.round(vertex.backPressuredTimeMsPerSecond / 10)}%`,
  );
}

function renderStatus(overview: JobOverview): void {
  const { job } = overview;
  byId("job-name").textContent = `· ${job.name}`;
  const status = byId("job-status");
  status.dataset.state = job.state;
  status.textContent =
    `${job.state} · ${job.elapsedSeconds.toFixed(0)} s · ${integer.format(job.records)} / ` +
    `${integer.format(job.totalRecords)} words · ${job.shuffle}`;
  const cause = byId("root-cause");
  cause.hidden = job.rootCause === null;
  cause.textContent = job.rootCause === null ? "" : `Root cause: ${job.rootCause}`;
  byId("throttle-current").textContent =
    job.throttle === null ? "no throttle" : `${integer.format(job.throttle)} words/s per counter`;
}

function renderGraph(overview: JobOverview): void {
  const graph = byId("graph");
  const nodes: Node[] = [];
  overview.vertices.forEach((vertex, index) => {
    if (index > 0) {
      const edge = overview.edges.find((e) => e.target === vertex.id);
      nodes.push(
        element(
          "div",
          { class: "edge" },
          element("div", {}, edge?.shipStrategy ?? ""),
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
          "data-backpressure-level": vertex.backPressureLevel,
          "data-coloured-by": vertex.colour.by,
          "data-busy": String(Math.round(vertex.busyTimeMsPerSecond)),
          style: `background: ${vertex.colour.background}`,
        },
        element("h3", {}, `${vertex.name} (×${vertex.parallelism})`),
        element(
          "div",
          { class: "metrics" },
          element("div", {}, "Back-pressure ", levelBadge(vertex)),
          element("div", { class: "busy" }, `Busy ${Math.round(vertex.busyTimeMsPerSecond / 10)}%`),
          element(
            "div",
            {},
            `in ${perSecond(vertex.recordsInPerSecond)} rec/s · out ${perSecond(vertex.recordsOutPerSecond)} rec/s`,
          ),
        ),
      ),
    );
  });
  graph.replaceChildren(...nodes);
}

function renderSubtasks(overview: JobOverview): void {
  const tables = overview.vertices.map((vertex) =>
    element(
      "table",
      { "data-vertex": vertex.name },
      element("caption", {}, vertex.name),
      element(
        "tr",
        {},
        ...[
          "Subtask",
          "Task manager",
          "State",
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
          element("td", {}, String(s.subtaskIndex)),
          element("td", {}, s.taskManager < 0 ? "–" : String(s.taskManager)),
          element("td", {}, s.state),
          element("td", {}, perSecond(s.recordsInPerSecond)),
          element("td", {}, perSecond(s.recordsOutPerSecond)),
          element("td", {}, bytesPerSecond(s.bytesInPerSecond)),
          element("td", {}, bytesPerSecond(s.bytesOutPerSecond)),
          element("td", {}, msPerSecond(s.busyTimeMsPerSecond)),
          element("td", {}, msPerSecond(s.idleTimeMsPerSecond)),
          element("td", {}, msPerSecond(s.backPressuredTimeMsPerSecond), " ", levelBadge(s)),
          element("td", {}, percent(s.inPoolUsage)),
          element("td", {}, percent(s.outPoolUsage)),
        ),
      ),
    ),
  );
  byId("subtasks").replaceChildren(...tables);
}

function renderCheckpoints(overview: JobOverview): void {
  const stats = overview.checkpoints;
  const section = byId("checkpoints");
  if (stats === null) {
    section.replaceChildren(element("p", { class: "legend" }, "The job takes no checkpoints."));
    return;
  }
  const restored =
    stats.lastRestoredCheckpointId < 0
      ? "none"
      : `#${stats.lastRestoredCheckpointId} at ${new Date(stats.lastCheckpointRestoreTimestamp).toLocaleTimeString()}`;
  const rows: [string, string, string][] = [
    ["Completed", "completed", integer.format(stats.numberOfCompletedCheckpoints)],
    ["Failed", "failed", integer.format(stats.numberOfFailedCheckpoints)],
    ["In progress", "in-progress", integer.format(stats.numberOfInProgressCheckpoints)],
    [
      "Latest completed",
      "latest",
      stats.lastCompletedCheckpointId < 0 ? "–" : `#${stats.lastCompletedCheckpointId}`,
    ],
    ["Duration", "duration", millis(stats.lastCheckpointDuration)],
    ["Size", "size", bytes(stats.lastCheckpointSize)],
    [
      "Alignment time",
      "alignment",
      stats.lastCheckpointAlignmentTime < 0
        ? "–"
        : millis(Math.round(stats.lastCheckpointAlignmentTime / 1e6)),
    ],
    ["In-flight data (unaligned)", "persisted", bytes(stats.lastCheckpointPersistedData)],
    ["Latest restored", "restored", restored],
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

/** The chart: words per second into the last vertex, and each vertex's back-pressure in %. */
class ThroughputChart {
  private readonly data: number[][];
  private readonly plot: uPlot;
  private readonly container = byId("chart");

  constructor(vertices: readonly VertexOverview[]) {
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

  add(overview: JobOverview): void {
    const last = overview.vertices[overview.vertices.length - 1];
    const values = [
      Date.now() / 1000,
      last?.recordsInPerSecond ?? 0,
      ...overview.vertices.map((v) => v.backPressuredTimeMsPerSecond / 10),
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

let chart: ThroughputChart | undefined;

let ended = false;

function render(overview: JobOverview): void {
  renderStatus(overview);
  renderGraph(overview);
  renderCheckpoints(overview);
  renderSubtasks(overview);
  chart ??= new ThroughputChart(overview.vertices);
  chart.add(overview);
  if (FINAL_STATES.has(overview.job.state)) {
    // The job manager sends the final state last: keep it, and stop listening.
    ended = true;
    events.close();
    for (const id of ["throttle-input", "throttle-set", "throttle-lift"]) {
      byId<HTMLInputElement | HTMLButtonElement>(id).disabled = true;
    }
  }
}

async function setThrottle(recordsPerSecond: number | null): Promise<void> {
  const response = await fetch("throttle", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ recordsPerSecond }),
  });
  if (!response.ok) {
    const { error } = (await response.json()) as { error?: string };
    window.alert(error ?? `the throttle could not be set (HTTP ${response.status})`);
  }
}

byId<HTMLFormElement>("throttle-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = Number(byId<HTMLInputElement>("throttle-input").value);
  if (Number.isFinite(value) && value > 0) void setThrottle(value);
});
byId("throttle-lift").addEventListener("click", () => void setThrottle(null));

const events = new EventSource("api/events");
events.onmessage = (message) => render(JSON.parse(message.data as string) as JobOverview);
events.onerror = () => {
  if (ended) return;
  byId("job-status").textContent += " · disconnected (the job manager has ended)";
  events.close();
};
