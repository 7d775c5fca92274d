import { once } from "node:events";
import type { Server } from "node:http";
import { ConfigurationError } from "@sluice/core";
import { RestOptions } from "@sluice/runtime-api";

/** Where {@link listenOnRestPort} listens. */
export interface RestAddress {
  readonly host: string;
  readonly port: number;
  /**
   * True when the port was set by the user: a taken port fails the start. False (the default
   * port): a taken port is reported to `warn` and a free one is taken instead.
   */
  readonly portIsExplicit: boolean;
}

/**
 * Listens on `address`, or, when its port is the default one and taken, on a free port.
 *
 * @throws ConfigurationError naming the address and `rest.port` when it cannot listen.
 */
export async function listenOnRestPort(
  server: Server,
  address: RestAddress,
  warn: (message: string) => void,
): Promise<void> {
  const { host, port } = address;
  try {
    server.listen(port, host);
    await once(server, "listening"); // rejects on the server's "error" (EADDRINUSE, ...)
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (address.portIsExplicit || code !== "EADDRINUSE") {
      throw new ConfigurationError(
        `the REST endpoint cannot listen on ${host}:${port} (${RestOptions.PORT.key}): ${(error as Error).message}`,
        { cause: error },
      );
    }
    warn(
      `the REST endpoint's default port ${port} is taken; using a free port (set ${RestOptions.PORT.key} to choose one)`,
    );
    server.listen(0, host);
    await once(server, "listening");
  }
}
