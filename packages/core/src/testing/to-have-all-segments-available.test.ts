import { describe, expect, it } from "vitest";
import { NetworkBufferPool } from "../memory/network-buffer-pool.js";
import { must } from "./assertions.js";
import "./to-have-all-segments-available.js";

describe("toHaveAllSegmentsAvailable", () => {
  it("passes when every segment is back and names available / total when one is missing", () => {
    const pool = new NetworkBufferPool(4, 128);
    expect(pool).toHaveAllSegmentsAvailable();
    const segment = must(pool.requestPooledMemorySegment());
    expect(() => expect(pool).toHaveAllSegmentsAvailable()).toThrowError(
      "expected every segment back in its pool: 3 of 4 available (1 missing)",
    );
    expect(pool).not.toHaveAllSegmentsAvailable();
    pool.recyclePooledMemorySegment(segment);
    expect(pool).toHaveAllSegmentsAvailable();
    pool.destroy();
  });

  it("rejects a value that is not a buffer pool instead of passing", () => {
    expect(() => expect({}).toHaveAllSegmentsAvailable()).toThrowError(
      /expects a NetworkBufferPool/,
    );
  });
});
