/**
 * The REST endpoint's routes, one small handler each, in Flink's REST API shapes where Flink has
 * the route (`/config`, `/overview`, `/jobmanager/config`, `/jobs`, `/jobs/overview`, `/jobs/:jobid`,
 * `/jobs/:jobid/vertices/:vertexid`, `/jobs/:jobid/checkpoints`, `/jobs/:jobid/exceptions`,
 * `/jobs/:jobid/execution-result`, `/taskmanagers`, `/taskmanagers/:taskmanagerid/metrics`,
 * `PATCH /jobs/:jobid`, `POST /jobs`), and Sluice's own: the job's event stream and job
 * messages.
 */
import type { JsonValue } from "@sluice/runtime-api";
import { SLUICE_VERSION } from "../control-plane-messages.js";
import type { JobManager } from "../job-manager.js";
import type { CheckpointingStatistics } from "./checkpointing-statistics.js";
import type { EventStreams } from "./event-streams.js";
import type { ExecutionGraphInfo } from "./execution-graph-info.js";
import type { ExecutionGraphInfoStore } from "./execution-graph-info-store.js";
import type { JobDetailsInfo } from "./job-details-info.js";
import { deliverJobMessage } from "./job-message-delivery.js";
import { submitJob } from "./job-submit-handler.js";
import type { MetricFetcher } from "./metric-fetcher.js";
import { RestHandlerError } from "./rest-handler-error.js";
import type { RestRoute } from "./rest-router.js";
import { taskManagerMetricsBody, taskManagerMetricsOf } from "./task-manager-metrics.js";

/** One event of `GET /jobs/:jobid/events`: the job's details and checkpoints now. */
export interface JobEvent {
  readonly job: JobDetailsInfo;
  readonly checkpoints: CheckpointingStatistics;
}

/** What the routes read and act on. */
export interface RestRouteContext {
  readonly jobManager: JobManager;
  readonly jobs: ExecutionGraphInfoStore;
  readonly fetcher: MetricFetcher;
  readonly streams: EventStreams;
  /** `web.refresh-interval`. */
  readonly refreshIntervalMs: number;
  /** How long a TaskExecutor may take to answer a job message (`heartbeat.timeout`). */
  readonly messageTimeoutMs: number;
}

/** The job's event now, with fresh metrics when they are older than the fetch interval. */
export async function jobEventOf(
  job: ExecutionGraphInfo,
  fetcher: MetricFetcher,
): Promise<JobEvent> {
  if (!job.ended) await fetcher.update();
  return { job: job.details(fetcher), checkpoints: job.checkpoints() };
}

/**
 * Keys whose values `GET /jobmanager/config` hides, as Flink's `GlobalConfiguration.isSensitive`
 * does: passwords, secrets, keys and tokens.
 */
const SENSITIVE_KEY = /password|secret|token|(^|[.-])key($|[.-])/i;
/** What a hidden value reads as (Flink's). */
const HIDDEN_VALUE = "******";

/**
 * The answer for job `jid` that the endpoint does not show: 503 while the job manager still lists
 * the jobs it takes over at its election (it may be one of them: Flink's REST answers 503 while
 * its dispatcher recovers), else 404.
 */
export function notFound(jobManager: JobManager, jid: string | undefined): never {
  if (jobManager.recoveringJobs) {
    throw new RestHandlerError(
      503,
      `job ${jid} is not known yet: the job manager at ${jobManager.url} was just elected and is listing the jobs it takes over; ask again`,
    );
  }
  throw new RestHandlerError(404, `job ${jid} not found`);
}

/** The routes of the REST endpoint. */
export function restRoutes(context: RestRouteContext): RestRoute[] {
  const { jobManager, jobs, fetcher } = context;
  const jobOf = (jid: string | undefined): ExecutionGraphInfo =>
    jobs.get(jid ?? "") ?? notFound(jobManager, jid);
  return [
    {
      method: "GET",
      path: "/config",
      handle: () => ({
        body: {
          "refresh-interval": context.refreshIntervalMs,
          "timezone-name": Intl.DateTimeFormat().resolvedOptions().timeZone,
          "timezone-offset": -new Date().getTimezoneOffset() * 60_000,
          "sluice-version": SLUICE_VERSION,
          features: {
            "web-submit": false,
            "web-cancel": true,
            "web-rescale": false,
            "web-history": false,
          },
        },
      }),
    },
    {
      method: "GET",
      path: "/overview",
      handle: () => {
        const states = jobs.all().map((job) => job.state);
        const count = (state: string) => states.filter((s) => s === state).length;
        return {
          body: {
            taskmanagers: jobManager.taskManagers.filter((tm) => tm.connected).length,
            "slots-total": jobManager.taskManagers
              .filter((tm) => tm.connected)
              .reduce((slots, tm) => slots + tm.numberOfSlots, 0),
            "jobs-running": states.length - count("FINISHED") - count("FAILED") - count("CANCELED"),
            "jobs-finished": count("FINISHED"),
            "jobs-cancelled": count("CANCELED"),
            "jobs-failed": count("FAILED"),
            "sluice-version": SLUICE_VERSION,
            // The plugin every task manager must load, as the job manager resolved it.
            "shuffle-plugin": jobManager.plugin.reference,
          },
        };
      },
    },
    {
      method: "GET",
      path: "/jobmanager/config",
      handle: () => ({
        body: Object.entries(jobManager.configuration.toObject())
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([key, value]) => ({
            key,
            value: SENSITIVE_KEY.test(key)
              ? HIDDEN_VALUE
              : typeof value === "string"
                ? value
                : JSON.stringify(value),
          })),
      }),
    },
    {
      method: "GET",
      path: "/jobs",
      handle: () => ({
        body: { jobs: jobs.all().map((job) => ({ id: job.jid, status: job.state })) },
      }),
    },
    {
      method: "POST",
      path: "/jobs",
      stateChanging: true,
      hasBody: true,
      handle: async ({ body }) => ({ status: 202, body: await submitJob(jobManager, body) }),
    },
    {
      method: "GET",
      path: "/jobs/overview",
      handle: () => ({ body: { jobs: jobs.all().map((job) => job.overview()) } }),
    },
    {
      method: "GET",
      path: "/jobs/:jobid",
      handle: async ({ params }) => {
        const job = jobOf(params.jobid);
        return { body: (await jobEventOf(job, fetcher)).job };
      },
    },
    {
      method: "PATCH",
      path: "/jobs/:jobid",
      stateChanging: true,
      handle: ({ params, query }) => {
        const job = jobOf(params.jobid);
        const mode = query.get("mode") ?? "cancel";
        if (mode !== "cancel") {
          throw new RestHandlerError(400, `mode=${mode} is not supported (mode=cancel is)`);
        }
        const reason = `job ${job.name} was canceled through the REST endpoint`;
        // A job being taken over is canceled too (as Flink cancels one being initialized): it
        // is not deployed, and ends CANCELED.
        const target = job.job ?? job.initializingJob;
        if (target === undefined) {
          throw new RestHandlerError(409, `${job.whyNotRunning()}: it cannot be canceled`);
        }
        target.cancel(reason);
        return { status: 202, body: {} };
      },
    },
    {
      method: "GET",
      path: "/jobs/:jobid/vertices/:vertexid",
      handle: async ({ params }) => {
        const { job } = await jobEventOf(jobOf(params.jobid), fetcher);
        const vertex = job.vertices.find((v) => v.id === params.vertexid);
        if (vertex === undefined) {
          throw new RestHandlerError(404, `job ${job.jid} has no vertex ${params.vertexid}`);
        }
        return { body: { ...vertex, now: job.now } };
      },
    },
    {
      method: "GET",
      path: "/jobs/:jobid/checkpoints",
      handle: ({ params }) => ({ body: jobOf(params.jobid).checkpoints() }),
    },
    {
      method: "GET",
      path: "/jobs/:jobid/execution-result",
      handle: ({ params }) => ({ body: jobOf(params.jobid).executionResult() }),
    },
    {
      method: "GET",
      path: "/jobs/:jobid/exceptions",
      handle: ({ params }) => ({ body: jobOf(params.jobid).exceptionsInfo() }),
    },
    {
      method: "GET",
      path: "/jobs/:jobid/events",
      handle: async ({ params }, response) => {
        const job = jobOf(params.jobid);
        const first = await jobEventOf(job, fetcher);
        if (!context.streams.open(job.jid, response, first)) {
          throw new RestHandlerError(
            503,
            `the job manager serves ${context.streams.size} event streams already (rest.event-streams.max); close a dashboard page or try again later`,
          );
        }
        if (job.ended) context.streams.finish(job.jid, first);
        return undefined;
      },
    },
    {
      method: "POST",
      path: "/jobs/:jobid/messages/:name",
      stateChanging: true,
      hasBody: true,
      handle: async ({ params, body }) => ({
        body: await deliverJobMessage(
          jobOf(params.jobid),
          params.name ?? "",
          (body ?? null) as JsonValue,
          context.messageTimeoutMs,
        ),
      }),
    },
    {
      method: "GET",
      path: "/taskmanagers/:taskmanagerid/metrics",
      handle: async ({ params, query }) => {
        const id = params.taskmanagerid ?? "";
        const taskManager = [...jobManager.taskManagers]
          .reverse()
          .find((tm) => tm.connected && tm.location.resourceId.toString() === id);
        if (taskManager === undefined) {
          throw new RestHandlerError(404, `no task manager ${id} is registered`);
        }
        let dumps: Awaited<ReturnType<typeof taskManager.queryMetrics>>;
        try {
          dumps = await taskManager.queryMetrics();
        } catch (error) {
          throw new RestHandlerError(
            503,
            `${taskManager.label} did not answer the metric query: ${(error as Error).message}`,
          );
        }
        return { body: taskManagerMetricsBody(taskManagerMetricsOf(dumps), query.get("get")) };
      },
    },
    {
      method: "GET",
      path: "/taskmanagers",
      handle: () => ({
        body: {
          taskmanagers: jobManager.taskManagers.map((tm) => ({
            id: tm.location.resourceId.toString(),
            path: tm.remoteAddress,
            host: tm.location.host,
            dataPort: tm.location.dataPort,
            hostname: tm.hostname,
            pid: tm.pid,
            index: tm.index,
            slotsNumber: tm.numberOfSlots,
            connected: tm.connected,
            metricEndpoints: tm.metricEndpoints,
          })),
        },
      }),
    },
  ];
}
