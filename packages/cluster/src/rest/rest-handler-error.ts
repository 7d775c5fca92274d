/**
 * A REST handler's refusal (Flink's `RestHandlerException`): the HTTP status and the message the
 * client gets as `{"errors": [message]}`. It never leaves the REST endpoint.
 */
export class RestHandlerError extends Error {
  constructor(
    /** The HTTP status of the response. */
    readonly status: number,
    message: string,
    /** Extra fields of the response body beside `errors`. */
    readonly body: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = "RestHandlerError";
  }
}
