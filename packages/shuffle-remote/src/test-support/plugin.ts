import { fileURLToPath } from "node:url";

/**
 * This plugin as tests configure it (`shuffle-service-factory.class`): the built entry, since the
 * conformance suite's worker processes run JavaScript, selected only through configuration.
 */
export const REMOTE_PLUGIN = `${fileURLToPath(new URL("../../dist/index.js", import.meta.url))}#RemoteShuffleServiceFactory`;
