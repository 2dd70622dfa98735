import { describe, expect, it } from "vitest";
import { routingModelSchema } from "./routing-table.js";
import { routingModel } from "../gateway/testing/routing-model.js";

describe("the routing table as a gateway reads it", () => {
  it("reads routing by cache, and a routing mode of a newer release as fewest in flight", () => {
    expect(routingModelSchema.parse({ ...routingModel("m"), routing: "cache" }).routing).toBe("cache");
    expect(routingModelSchema.parse({ ...routingModel("m"), routing: "by-the-moon" }).routing).toBe("least");
  });
});
