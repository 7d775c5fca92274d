import { ConfigOptions } from "../config-option.js";

/** The default plugin: the TCP shuffle, as Flink defaults to its Netty shuffle. */
export const DEFAULT_SHUFFLE_SERVICE_FACTORY = "@sluice/shuffle-tcp#TcpShuffleServiceFactory";

/** Options that select the shuffle plugin (Flink's `ShuffleServiceOptions`). */
export const ShuffleServiceOptions = {
  /**
   * The plugin that provides the shuffle: read by `ShuffleServiceLoader` on the coordinator (for
   * the ShuffleMaster) and on every worker (for the ShuffleEnvironment).
   */
  SHUFFLE_SERVICE_FACTORY_CLASS: ConfigOptions.key("shuffle-service-factory.class")
    .classType()
    .defaultValue(DEFAULT_SHUFFLE_SERVICE_FACTORY)
    .withDescription(
      "The shuffle plugin, as `<module>#<export>`: a package name resolved from the application " +
        "(the config file's folder, then the working directory), a path relative to the config " +
        "file's folder, an absolute path or a `file:` URL; without `#`, the default export. The " +
        "export is a `ShuffleServiceFactory` class (constructed without arguments) or object. " +
        "Aliases: `tcp` = `@sluice/shuffle-tcp#TcpShuffleServiceFactory`, " +
        "`ws` = `@sluice/shuffle-ws#WsShuffleServiceFactory`, " +
        "`remote` = `@sluice/shuffle-remote#RemoteShuffleServiceFactory`. The same plugin must be configured " +
        "on the coordinator and on every worker.",
    ),
} as const;
