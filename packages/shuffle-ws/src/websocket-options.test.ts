import { ALL_OPTIONS } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { WebSocketOptions } from "./websocket-options.js";
import { WsShuffleServiceFactory } from "./ws-shuffle-service-factory.js";

describe("WebSocketOptions", () => {
  it("turn permessage-deflate off and keep the low water mark below the high one by default", () => {
    expect(WebSocketOptions.PER_MESSAGE_DEFLATE.defaultValue).toBe(false);
    expect(WebSocketOptions.LOW_WATER_MARK.defaultValue).toBeLessThan(
      WebSocketOptions.HIGH_WATER_MARK.defaultValue,
    );
  });

  it("are declared by the factory, and none of their keys is one of Sluice's own", () => {
    const declared = new WsShuffleServiceFactory().configOptions;
    expect(declared).toEqual(Object.values(WebSocketOptions));
    const sluiceKeys = new Set(ALL_OPTIONS.map((option) => option.key));
    for (const option of declared) expect(sluiceKeys.has(option.key)).toBe(false);
  });
});
