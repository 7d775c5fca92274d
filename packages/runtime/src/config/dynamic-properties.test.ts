import { describe, expect, it } from "vitest";
import { parseDynamicProperties } from "./dynamic-properties.js";

describe("parseDynamicProperties", () => {
  it("separates -D key=value and -Dkey=value from other arguments, in order", () => {
    expect(
      parseDynamicProperties(["run", "-D", "a.b=1", "--x", "-Dc.d = two words ", "-De=f=g"]),
    ).toEqual({
      properties: [
        ["a.b", "1"],
        ["c.d", "two words"],
        ["e", "f=g"],
      ],
      remaining: ["run", "--x"],
    });
  });

  it("accepts an empty value", () => {
    expect(parseDynamicProperties(["-Dk="]).properties).toEqual([["k", ""]]);
  });
});
