import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { refusalOf } from "../../test/support/refusal.js";
import { defaultCacheRoutingWeights } from "./cache-routing.js";
import { loadServerConfig } from "./server-config.js";

describe("server.yaml gateway.cache_routing", () => {
  const directory = mkdtempSync(path.join(tmpdir(), "llmgw-cache-routing-"));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const load = (text: string) => {
    const file = path.join(directory, "server.yaml");
    writeFileSync(file, text);
    return loadServerConfig(file);
  };

  it("takes the defaults when left out, and each weight given", () => {
    expect(load("listen: 127.0.0.1:0\n").cacheRouting).toEqual(defaultCacheRoutingWeights);
    expect(load("gateway:\n  cache_routing:\n    queue_weight: 0.5\n    cache_full: 0.9\n").cacheRouting).toEqual({ prefix: 3, queue: 0.5, cache: 2, cacheFull: 0.9 });
  });

  it.each([
    ["cache_full: 1.5", "gateway.cache_routing.cache_full"],
    ["prefix_weight: -1", "gateway.cache_routing.prefix_weight"],
    ["queue_wieght: 1", 'unknown key "queue_wieght"'],
  ])("refuses %s, naming the field", (line, expected) => {
    const error = refusalOf(() => load(`gateway:\n  cache_routing:\n    ${line}\n`));
    expect([error.message, ...error.details.map((detail) => `${detail.where}: ${detail.message}`)].join("\n")).toContain(expected);
  });

  it("accepts routing: cache on a model, and refuses a policy it does not know, naming the three", () => {
    const model = (routing: string) => `models:\n  - name: chat\n    routing: ${routing}\n    profiles:\n      - { engine: vllm, source: "hf://org/model@main" }\n`;
    expect(load(model("cache")).declared[0]?.entry.routing).toBe("cache");
    const error = refusalOf(() => load(model("sticky")));
    expect([error.message, ...error.details.map((detail) => detail.message)].join("\n")).toContain("cache (where the prompt's prefix was sent");
  });
});
