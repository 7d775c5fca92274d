import { describe, expect, it } from "vitest";
import { decodeLeaderAddresses, encodeLeaderAddresses } from "./leader-addresses.js";

describe("a leader's candidate key value", () => {
  it("carries the address and the REST endpoint's and shuffle master's, and reads back what it wrote", () => {
    const all = encodeLeaderAddresses("ws://10.0.0.1:6123", {
      restAddress: "http://10.0.0.1:8081/",
      shuffleMasterAddress: "10.0.0.1:23123",
    });
    expect(decodeLeaderAddresses(all)).toEqual({
      address: "ws://10.0.0.1:6123",
      restAddress: "http://10.0.0.1:8081/",
      shuffleMasterAddress: "10.0.0.1:23123",
    });
    expect(decodeLeaderAddresses(encodeLeaderAddresses("ws://a:1"))).toEqual({
      address: "ws://a:1",
    });
    expect(
      decodeLeaderAddresses('{"address":"ws://a:1","restAddress":7,"shuffleMasterAddress":"a:2"}'),
    ).toEqual({ address: "ws://a:1", shuffleMasterAddress: "a:2" });
  });

  it("reads a bare address, as the first releases wrote it, and a value that is not an object of addresses, as an address", () => {
    expect(decodeLeaderAddresses("ws://10.0.0.1:6123")).toEqual({ address: "ws://10.0.0.1:6123" });
    expect(decodeLeaderAddresses('{"rest":1}')).toEqual({ address: '{"rest":1}' });
    expect(decodeLeaderAddresses("42")).toEqual({ address: "42" });
  });
});
