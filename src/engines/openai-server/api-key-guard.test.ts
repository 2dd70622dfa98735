import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { bearerKeyMatches, guardWithApiKey } from "./api-key-guard.js";

describe("an engine's API key", () => {
  it("matches only the key itself as a bearer token, whatever the scheme's case", () => {
    expect(bearerKeyMatches("Bearer k-1", "k-1")).toBe(true);
    expect(bearerKeyMatches("bearer k-1", "k-1")).toBe(true);
    expect(bearerKeyMatches("Bearer  k-1", "k-1")).toBe(true);
    expect(bearerKeyMatches("Bearer two words", "two words")).toBe(true);
    expect(bearerKeyMatches("Bearer k-2", "k-1")).toBe(false);
    expect(bearerKeyMatches("Bearer k-1x", "k-1")).toBe(false);
    expect(bearerKeyMatches("Basic k-1", "k-1")).toBe(false);
    expect(bearerKeyMatches("k-1", "k-1")).toBe(false);
    expect(bearerKeyMatches("Bearer ", "k-1")).toBe(false);
    expect(bearerKeyMatches(undefined, "k-1")).toBe(false);
  });

  it("guards every path but the open ones, with a 401 in OpenAI's shape that is logged", async () => {
    const server = Fastify();
    const lines: string[] = [];
    guardWithApiKey(server, { apiKey: "k-1", isOpen: (path) => path === "/health", refusal: { type: "authentication_error", message: "Invalid API Key" }, log: (line) => lines.push(line) });
    for (const path of ["/health", "/v1/models", "/load_lora_adapter"]) server.get(path, async () => ({ served: path }));
    const status = async (url: string, authorization?: string) => (await server.inject({ url, headers: authorization === undefined ? {} : { authorization } })).statusCode;
    expect(await status("/health")).toBe(200);
    expect(await status("/health?verbose=1")).toBe(200);
    expect(await status("/v1/models")).toBe(401);
    // Not only /v1: a route outside it (SGLang's adapter loading) needs the key too.
    expect(await status("/load_lora_adapter")).toBe(401);
    expect(await status("/v1/models", "Bearer k-1")).toBe(200);
    expect(await status("/load_lora_adapter", "Bearer k-1")).toBe(200);
    const refused = await server.inject({ url: "/v1/models?x=1", headers: { authorization: "Bearer wrong" } });
    expect(refused.json()).toEqual({ error: { message: "Invalid API Key", type: "authentication_error", param: null, code: 401 } });
    expect(lines.at(-1)).toBe("GET /v1/models status=401 (no valid API key)");
    await server.close();
  });
});
