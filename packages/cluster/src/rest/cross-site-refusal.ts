import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import { RestHandlerError } from "./rest-handler-error.js";

/**
 * Why a state-changing request is refused, if it is: the operator's browser reaches the REST
 * endpoint's loopback port too, so a page of another site must not be able to cancel a job or
 * send it a message. The `Host` must name this port by an IP address or `localhost` (a DNS name
 * could be rebound to loopback), an `Origin`, when sent, must be that same host, and the body
 * must be declared JSON (a cross-site form or `no-cors` fetch can only send `text/plain` and form
 * types without a CORS preflight, which the endpoint never grants).
 *
 * @param port - the endpoint's port.
 * @returns the refusal (403 or 415), or `undefined` when the request may go on.
 */
export function crossSiteRefusal(
  request: IncomingMessage,
  port: number,
): RestHandlerError | undefined {
  const host = request.headers.host ?? "";
  let hostname: string | undefined;
  try {
    const parsed = new URL(`http://${host}`);
    if (parsed.port === String(port)) hostname = parsed.hostname;
  } catch {
    hostname = undefined;
  }
  if (
    hostname === undefined ||
    !(hostname === "localhost" || isIP(hostname.replace(/^\[|\]$/g, "")) !== 0)
  ) {
    return new RestHandlerError(
      403,
      `the Host header ${JSON.stringify(host)} is not this endpoint's address (an IP address or localhost with port ${port})`,
    );
  }
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `http://${host}`) {
    return new RestHandlerError(
      403,
      `the request comes from ${JSON.stringify(origin)}, not from the dashboard at http://${host}`,
    );
  }
  const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json") {
    return new RestHandlerError(
      415,
      `the body must be application/json, got ${JSON.stringify(request.headers["content-type"] ?? "none")}`,
    );
  }
  return undefined;
}
