import { afterEach, describe, expect, it } from "vitest";
import { defaultCacheRoutingWeights } from "../../catalog/cache-routing.js";
import { routingTableSchema } from "../../protocol/routing-table.js";
import { CachePlacement } from "./cache-placement.js";

const placements: CachePlacement[] = [];
afterEach(() => {
  for (const placement of placements.splice(0)) placement.close();
});

function placement(...args: ConstructorParameters<typeof CachePlacement>): CachePlacement {
  const made = new CachePlacement(...args);
  placements.push(made);
  return made;
}

describe("CachePlacement's weights", () => {
  it("scores with the weights the server's routing table carries, so a standalone gateway follows server.yaml", () => {
    const cache = placement();
    expect(cache.weights).toEqual(defaultCacheRoutingWeights);
    cache.follow({ models: [], cache_routing: { prefix_weight: 5, queue_weight: 0.5, cache_weight: 1, cache_full: 0.9 } });
    expect(cache.weights).toEqual({ prefix: 5, queue: 0.5, cache: 1, cacheFull: 0.9 });
    expect(cache.lookup("qwen", { model: "qwen", messages: [{ role: "user", content: "hello" }] }).knowledge.weights).toEqual({ prefix: 5, queue: 0.5, cache: 1, cacheFull: 0.9 });
  });

  it("keeps its configured weights while the table carries none (a server of an older release)", () => {
    const configured = { prefix: 4, queue: 2, cache: 2, cacheFull: 0.8 };
    const cache = placement(configured);
    cache.follow({ models: [], cache_routing: { prefix_weight: 5, queue_weight: 0.5, cache_weight: 1, cache_full: 0.9 } });
    cache.follow({ models: [] });
    expect(cache.weights).toEqual(configured);
  });

  it("reads a table whose weights are malformed as one without them, rather than refusing the whole table", () => {
    const table = routingTableSchema.parse({ revision: 3, models: [], aliases: {}, cache_routing: { prefix_weight: "high" } });
    expect(table.cache_routing).toBeUndefined();
    expect(table.revision).toBe(3);
  });
});
