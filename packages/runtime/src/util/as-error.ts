/** What was thrown, as an Error: an Error as it is, anything else as an Error of its text. */
export function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(String(thrown));
}
