import { atLeast, ConfigOptions, inRange } from "../config-option.js";
import { formatMemorySize } from "../memory-size.js";

const atLeastBytes = (min: number) => (value: number) =>
  value >= min ? undefined : `a size of at least ${formatMemorySize(min)}`;

/**
 * The job manager's REST endpoint and web dashboard (Flink's `WebMonitorEndpoint`): where it
 * listens, its limits, and what it keeps. The keys come from Flink's `RestOptions` and
 * `WebOptions`, the job store's and the metric fetcher's keys, and Sluice's own limits.
 */
export const RestOptions = {
  /** The port of the REST endpoint and dashboard. */
  PORT: ConfigOptions.key("rest.port")
    .intType()
    .defaultValue(8081)
    .withValidator(inRange(0, 65535, "a port number"))
    .withDescription(
      "Port of the job manager's REST endpoint and web dashboard (every job it runs: its graph, " +
        "back-pressure, throughput, checkpoints, subtasks). 0 takes any free port. When the " +
        "default port is taken, the job manager warns and takes a free one; a port set " +
        "explicitly must be free.",
    ),

  /** Where clients (`sluice run`, `list`, `cancel`) reach the REST endpoint. */
  ADDRESS: ConfigOptions.key("rest.address")
    .stringType()
    .noDefaultValue()
    .withFallbackKeys("jobmanager.rpc.address")
    .withDescription(
      "The address clients (`sluice run`, `sluice list`, `sluice cancel`) reach the job " +
        "manager's REST endpoint at, with `rest.port`; unset: `jobmanager.rpc.address`, else " +
        "127.0.0.1. With high availability clients follow the leader instead, and a job " +
        "manager whose REST endpoint listens on every interface publishes this address.",
    ),

  /** The local address the REST endpoint binds to. */
  BIND_ADDRESS: ConfigOptions.key("rest.bind-address")
    .stringType()
    .defaultValue("127.0.0.1")
    .withDescription(
      "Local address the REST endpoint and dashboard listen on. Sluice defaults to loopback " +
        "(Flink binds every interface): the endpoint has no authentication and can cancel jobs " +
        "and send them messages. Set `0.0.0.0` to reach it from another host.",
    ),

  /** The largest request body (Flink's key; a smaller default). */
  SERVER_MAX_CONTENT_LENGTH: ConfigOptions.key("rest.server.max-content-length")
    .memoryType()
    .defaultValue("1mb")
    .withValidator(atLeastBytes(1024))
    .withDescription(
      "The largest request body the REST endpoint reads. A longer one is refused with 413 " +
        "while it arrives, before it is parsed. Flink's default is 100 mb, for jar uploads, " +
        "which Sluice does not take.",
    ),

  /** Open connections to the REST endpoint (Sluice). */
  SERVER_MAX_CONNECTIONS: ConfigOptions.key("rest.server.max-connections")
    .intType()
    .defaultValue(64)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Sluice: how many connections the REST endpoint keeps open at once, event streams " +
        "included; a further one is closed at once, with at most one warning a second.",
    ),

  /** How long a request may take to arrive (Sluice). */
  SERVER_REQUEST_TIMEOUT: ConfigOptions.key("rest.server.request-timeout")
    .durationType()
    .defaultValue("10s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: how long the REST endpoint waits for a request's headers and body, from the " +
        "moment the connection opened or its previous response ended; a connection whose " +
        "request has not arrived by then (a silent or slow client) is answered 408 and closed. " +
        "A stall of the job manager's own event loop does not count: the deadline is judged " +
        "after the bytes that arrived meanwhile were read.",
    ),

  /** Open event streams (Sluice). */
  EVENT_STREAMS_MAX: ConfigOptions.key("rest.event-streams.max")
    .intType()
    .defaultValue(16)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Sluice: how many Server-Sent Event streams (`GET /jobs/:jobid/events`, one per open " +
        "dashboard page) the REST endpoint serves at once; a further one is refused with 503.",
    ),

  /** How long an event stream may leave its events untaken (Sluice). */
  EVENT_STREAMS_SLOW_CLIENT_TIMEOUT: ConfigOptions.key("rest.event-streams.slow-client-timeout")
    .durationType()
    .defaultValue("30s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Sluice: an event stream whose client has not taken the previous event when the next is " +
        "due skips that event (the next one carries the whole state again), so the job manager " +
        "holds at most one event per stream; a stream that took nothing for this long is closed.",
    ),

  /** Bytes one event stream sends before it is reset (Sluice). */
  EVENT_STREAMS_MAX_BYTES: ConfigOptions.key("rest.event-streams.max-bytes")
    .memoryType()
    .defaultValue("1mb")
    .withValidator(atLeastBytes(1024))
    .withDescription(
      "Sluice: once an event stream sent this many bytes its connection is reset and the " +
        "page's EventSource reconnects at once, getting the whole state again. A client that " +
        "reads nothing thus makes the kernel buffer at most this much for it, however long it " +
        "stays.",
    ),

  /** How long the result of an asynchronous operation is kept (Flink's). */
  ASYNC_STORE_DURATION: ConfigOptions.key("rest.async.store-duration")
    .durationType()
    .defaultValue("5min")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "How long the REST endpoint keeps the outcome of an asynchronous operation (a savepoint " +
        "triggered with `POST /jobs/:jobid/savepoints` or `POST /jobs/:jobid/stop`) once it " +
        "completed, for `GET /jobs/:jobid/savepoints/:triggerid` to answer; later that trigger " +
        "id is unknown (404).",
    ),

  /** How often the dashboard's view is refreshed (Flink's `web.refresh-interval`). */
  WEB_REFRESH_INTERVAL: ConfigOptions.key("web.refresh-interval")
    .durationType()
    .defaultValue("3s")
    .withValidator(atLeast(100, "a duration of at least 100 ms"))
    .withDescription(
      "How often the REST endpoint sends an open dashboard page the job's state (one event of " +
        "its event stream).",
    ),

  /** Exceptions kept per job (Flink's `web.exception-history-size`). */
  WEB_EXCEPTION_HISTORY_SIZE: ConfigOptions.key("web.exception-history-size")
    .intType()
    .defaultValue(16)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "How many of a job's failures `GET /jobs/:jobid/exceptions` keeps, newest first; older " +
        "ones are dropped (the response says `truncated`).",
    ),

  /** How often the task managers' metrics are fetched (Flink's). */
  METRIC_FETCHER_UPDATE_INTERVAL: ConfigOptions.key("metrics.fetcher.update-interval")
    .durationType()
    .defaultValue("10s")
    .withValidator(atLeast(0, "a duration"))
    .withDescription(
      "The REST endpoint queries the task managers' metrics when a request or an event needs " +
        "them and the last query is older than this (none while nobody looks). Per-second " +
        "values are averaged over the time between two queries.",
    ),

  /** Ended jobs kept for the REST endpoint (Flink's `jobstore.max-capacity`). */
  JOB_STORE_MAX_CAPACITY: ConfigOptions.key("jobstore.max-capacity")
    .intType()
    .defaultValue(2147483647)
    .withValidator(atLeast(0, "a count"))
    .withDescription(
      "How many ended jobs the REST endpoint keeps (their final details, checkpoints and " +
        "exceptions, as JSON; the job itself is not kept); beyond it the oldest goes.",
    ),

  /** How long ended jobs are kept (Flink's `jobstore.expiration-time`). */
  JOB_STORE_EXPIRATION_TIME: ConfigOptions.key("jobstore.expiration-time")
    .durationType()
    .defaultValue("3600s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription("How long the REST endpoint keeps an ended job's final details."),
} as const;
