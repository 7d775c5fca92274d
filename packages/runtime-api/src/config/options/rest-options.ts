import { ConfigOptions, inRange } from "../config-option.js";

/** The job manager's web endpoint: the dashboard and its REST calls (Flink's `RestOptions`). */
export const RestOptions = {
  /** The port of the dashboard. */
  PORT: ConfigOptions.key("rest.port")
    .intType()
    .defaultValue(8081)
    .withValidator(inRange(0, 65535, "a port number"))
    .withDescription(
      "Port of the job manager's web dashboard (the demo's job graph, back-pressure and " +
        "throughput, live). 0 takes any free port. When the default port is taken, the demo " +
        "warns and takes a free one; a port set explicitly must be free.",
    ),

  /** The local address the dashboard binds to. */
  BIND_ADDRESS: ConfigOptions.key("rest.bind-address")
    .stringType()
    .defaultValue("127.0.0.1")
    .withDescription(
      "Local address the web dashboard listens on. Sluice defaults to loopback (Flink binds " +
        "every interface): the dashboard has no authentication and can change the job's " +
        "throttle. Set `0.0.0.0` to reach it from another host.",
    ),
} as const;
