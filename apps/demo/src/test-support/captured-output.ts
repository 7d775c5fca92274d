import { PassThrough } from "node:stream";

/** A stream to pass as the demo's stdout or stderr, and what was written to it. */
export function capture(): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => text };
}
