import { TRANSPORT_WARNING_TYPE } from "@sluice/network";
import type { Transport, TransportServer } from "@sluice/network/plugin";
import { afterEach, describe, expect, it, vi } from "vitest";

const MAX_FRAME = 1 << 20;

/** An error as a listening socket reports a failed accept (EMFILE cannot be provoked reliably). */
function acceptFailure(): Error {
  return Object.assign(new Error("accept EMFILE"), { code: "EMFILE", syscall: "accept" });
}

/**
 * A transport's listener errors reach the caller: an error of the listening server goes to the
 * `onError` the caller passed (and the server keeps accepting), or, without one, becomes a
 * `SluiceTransportWarning` naming the server; never a swallowed error or an unhandled `error`
 * event.
 *
 * @param name - the transport's name as its warnings say it (`tcp`, `ws`).
 * @param createTransport - a new transport of the plugin.
 * @param failLastServer - makes the most recently created listening server emit `error`: the
 *   plugin's test captures the servers its transport creates (e.g. by mocking `node:net`'s
 *   `createServer`), as nothing else can make a listener fail after it listens.
 */
export function describeListenerErrorsSuite(
  name: string,
  createTransport: () => Transport,
  failLastServer: (error: Error) => void,
): void {
  describe(`the ${name} transport's listener errors`, () => {
    const servers: TransportServer[] = [];

    afterEach(async () => {
      vi.restoreAllMocks();
      for (const server of servers.splice(0)) await server.close();
    });

    it("hands an error of the listening server to onError and keeps accepting connections", async () => {
      const errors: Error[] = [];
      const transport = createTransport();
      const server = await transport.listen({
        host: "127.0.0.1",
        port: 0,
        maxFrameSize: MAX_FRAME,
        onConnection: (connection) => connection.close(),
        onError: (error) => errors.push(error),
      });
      servers.push(server);
      const failure = acceptFailure();
      failLastServer(failure);
      expect(errors).toEqual([failure]);
      const connection = await transport.connect({
        host: "127.0.0.1",
        port: server.port,
        connectTimeoutMs: 5_000,
        maxFrameSize: MAX_FRAME,
      });
      connection.destroy();
    });

    it("emits a SluiceTransportWarning naming the server when nobody passed onError", async () => {
      const warnings = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
      const server = await createTransport().listen({
        host: "127.0.0.1",
        port: 0,
        maxFrameSize: MAX_FRAME,
        onConnection: (connection) => connection.close(),
      });
      servers.push(server);
      failLastServer(acceptFailure());
      expect(warnings).toHaveBeenCalledWith(
        `${name} data server 127.0.0.1:${server.port}: accept EMFILE`,
        expect.objectContaining({ type: TRANSPORT_WARNING_TYPE }),
      );
    });
  });
}
