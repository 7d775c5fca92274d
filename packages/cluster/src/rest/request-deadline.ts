import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { type DeadlineAfterPoll, deadlineAfterPoll } from "@sluice/network/plugin";

/** What Node's own request timeout answers, before it closes the connection. */
const REQUEST_TIMEOUT_RESPONSE =
  "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";

/** One connection's wait for its next request. */
interface Waiting {
  deadline: DeadlineAfterPoll;
  /** The request being received or answered; undefined until its headers arrived. */
  request: IncomingMessage | undefined;
}

/**
 * Closes a connection of `server` whose request has not fully arrived `timeoutMs` after the
 * connection opened or its previous response ended (`rest.server.request-timeout`), answering
 * 408 first unless a response is under way.
 *
 * Node's own `requestTimeout` and `headersTimeout` check from its timers phase: after a stall of
 * this event loop (a long task, a slow host) they find a request incomplete whose rest had been
 * waiting in the socket, and answer 408 to a client that sent in time. The deadline here is judged
 * after the poll phase has read those bytes ({@link deadlineAfterPoll}). The server must be
 * created with both of Node's timeouts off (0).
 */
export function enforceRequestDeadline(server: Server, timeoutMs: number): void {
  const waiting = new WeakMap<Socket, Waiting>();
  const arm = (socket: Socket): DeadlineAfterPoll =>
    deadlineAfterPoll(timeoutMs, () => {
      const state = waiting.get(socket);
      // Arrived whole: the response is the handler's business; its end arms the next wait.
      if (state?.request?.complete === true) return;
      if (state?.request === undefined) socket.end(REQUEST_TIMEOUT_RESPONSE);
      socket.destroySoon();
    });

  server.on("connection", (socket: Socket) => {
    const state: Waiting = { deadline: arm(socket), request: undefined };
    waiting.set(socket, state);
    socket.once("close", () => state.deadline.clear());
  });
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    const state = waiting.get(socket);
    if (state === undefined) return;
    state.request = request;
    response.once("finish", () => {
      if (state.request !== request || socket.destroyed) return;
      // Kept alive: the next request has the whole timeout again.
      state.deadline.clear();
      state.request = undefined;
      state.deadline = arm(socket);
    });
  });
}
