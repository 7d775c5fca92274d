import { describe, expect, it } from "vitest";
import { vertexColour } from "./vertex-colour.js";

describe("vertexColour", () => {
  it("colours a busy vertex that is not back-pressured on the busy scale, however OK its back-pressure", () => {
    // The throttled counters: busy all the time, back-pressure 0 %.
    expect(vertexColour(999, 0)).toEqual({ by: "busy", background: "hsl(30, 80%, 82%)" });
    // An idle vertex: blue.
    expect(vertexColour(0, 0)).toEqual({ by: "busy", background: "hsl(210, 80%, 82%)" });
    expect(vertexColour(500, 0).background).toBe("hsl(120, 80%, 82%)");
  });

  it("shades a back-pressured vertex red, darker the more it waits, when it waits more than it works", () => {
    expect(vertexColour(10, 990)).toEqual({ by: "back-pressured", background: "hsl(0, 75%, 45%)" });
    expect(vertexColour(100, 500).background).toBe("hsl(0, 75%, 67%)");
    // Back-pressured less than busy: the busy scale.
    expect(vertexColour(700, 300).by).toBe("busy");
    // OK back-pressure never paints red.
    expect(vertexColour(50, 100).by).toBe("busy");
  });

  it("treats a busy time not measured yet (NaN) as idle", () => {
    expect(vertexColour(Number.NaN, 0).background).toBe("hsl(210, 80%, 82%)");
  });
});
