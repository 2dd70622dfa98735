import { describe, expect, it } from "vitest";
import { externalUpstream } from "./external.js";

describe("external models", () => {
  it("sends requests to the provider's base URL with the key from the server's environment", () => {
    const upstream = externalUpstream("gpt-4o", { base_url: "https://api.openai.com/v1/", api_key_env: "OPENAI_API_KEY" }, { OPENAI_API_KEY: "sk-test" });
    expect(upstream).toEqual({ baseUrl: "https://api.openai.com/v1", upstreamModel: "gpt-4o", headers: { authorization: "Bearer sk-test" } });
  });

  it("asks the provider for its own model name when one is given", () => {
    expect(externalUpstream("fast", { base_url: "https://example.test/v1", model: "gpt-4o-mini" }, {}).upstreamModel).toBe("gpt-4o-mini");
  });

  it("refuses a key variable that is not set, naming the variable and no value", () => {
    expect(() => externalUpstream("gpt-4o", { base_url: "https://api.openai.com/v1", api_key_env: "OPENAI_API_KEY" }, {})).toThrow(
      /OPENAI_API_KEY, which is not set/,
    );
  });
});
