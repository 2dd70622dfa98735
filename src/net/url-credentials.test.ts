import { describe, expect, it } from "vitest";
import { withUrlCredentials } from "./url-credentials.js";

describe("withUrlCredentials", () => {
  it("moves a URL's login into a Basic header, decoding escapes", () => {
    expect(withUrlCredentials("https://robot:p%40ss@mirror.example/m/config.json", { range: "bytes=0-7" })).toEqual({
      url: "https://mirror.example/m/config.json",
      headers: { range: "bytes=0-7", authorization: `Basic ${Buffer.from("robot:p@ss").toString("base64")}` },
    });
  });

  it("leaves a URL without a login alone, and lets a caller's Authorization win", () => {
    expect(withUrlCredentials("https://mirror.example/m/")).toEqual({ url: "https://mirror.example/m/", headers: {} });
    expect(withUrlCredentials("https://a:b@hub.example/x", { Authorization: "Bearer t" })).toEqual({ url: "https://hub.example/x", headers: { Authorization: "Bearer t" } });
  });
});
