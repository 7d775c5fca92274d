/**
 * `@sluice/network`: the transport-neutral network shuffle. Applications do not import it; they
 * name a plugin (`tcp`, `ws`, or `@sluice/network#LocalShuffleServiceFactory` for one process),
 * so this entry point holds only what a configuration or an application names: the in-process
 * factory and the type of the warnings the transports emit (docs/api-tiers.md).
 *
 * The building blocks of a plugin on another transport (the factory it extends, the
 * `Transport` seam it implements, TLS and keep-alive helpers, partitions, gates and the wire
 * protocol) are in `@sluice/network/plugin`; builders for tests in `@sluice/network/testing`.
 */
export { LocalShuffleServiceFactory } from "./environment/network-shuffle-service-factory.js";
export { TRANSPORT_WARNING_TYPE } from "./netty/transport/transport-warning.js";
