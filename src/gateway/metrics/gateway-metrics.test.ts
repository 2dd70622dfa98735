import { describe, expect, it } from "vitest";
import { GatewayMetrics } from "./gateway-metrics.js";

const line = (text: string, name: string) => text.split("\n").find((entry) => entry.startsWith(name))?.split(" ").at(-1);

describe("the gateway's metrics, counted in plain numbers between scrapes", () => {
  it("shows every answer by model and status, across scrapes, and the requests in flight now", async () => {
    const metrics = new GatewayMetrics();
    const chat = metrics.model("chat");
    chat.answered(200);
    chat.answered(200);
    metrics.model("chat").answered(429);
    chat.inFlight += 2;
    let text = await metrics.registry.metrics();
    expect(line(text, 'llmgw_gateway_requests_total{model="chat",status="200"}')).toBe("2");
    expect(line(text, 'llmgw_gateway_requests_total{model="chat",status="429"}')).toBe("1");
    expect(line(text, 'llmgw_gateway_in_flight{model="chat"}')).toBe("2");
    chat.answered(200);
    chat.inFlight -= 2;
    text = await metrics.registry.metrics();
    // A counter keeps growing: what the first scrape handed over is not counted twice, nor lost.
    expect(line(text, 'llmgw_gateway_requests_total{model="chat",status="200"}')).toBe("3");
    expect(line(text, 'llmgw_gateway_requests_total{model="chat",status="429"}')).toBe("1");
    expect(line(text, 'llmgw_gateway_in_flight{model="chat"}')).toBe("0");
  });
});
