import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../../test/support/temporary-directory.js";
import { insertApiTokens } from "../../../test/support/api-tokens.js";
import { openStore, type Store } from "../../store/open-store.js";
import { CatalogService } from "../../services/catalog-service.js";
import { buildApp } from "../../server/build-app.js";
import { Gateway } from "../../gateway/request/gateway.js";
import { openPolicy } from "../../gateway/policy/open-policy.js";
import { seriesViewSchema } from "../../protocol/console.js";
import { seriesBucketCount } from "../../gateway/metrics/series-steps.js";

describe("the series routes", () => {
  let store: Store;
  let app: FastifyInstance;
  let tokens: Awaited<ReturnType<typeof insertApiTokens>>;

  beforeAll(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-series-") });
    tokens = await insertApiTokens(store);
    const declared = [{ entry: { name: "chat", profiles: [{ engine: "vllm" as const, source: "/weights/chat", gpus: 1 }] }, source: "file" as const, place: "server.yaml: models[0]" }];
    const gateway = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
    app = await buildApp({ store, catalog: new CatalogService(store, declared, "server.yaml"), adminTokenHint: "see admin-token", gateway });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it("adds a standalone gateway's report to the model's series and to the whole gateway's", async () => {
    const start = Math.floor(Date.now() / 10_000) * 10_000;
    const latency = Array.from({ length: seriesBucketCount }, (_, index) => (index === 20 ? 10 : 0));
    const report = { steps: [{ model: "chat", start, requests: 10, errors: 1, completion_tokens: 50, latency, ttft: latency }] };
    const added = await app.inject({ method: "POST", url: "/api/v1/gateway/series", headers: tokens.as(tokens.admin), payload: report });
    expect(added.json()).toEqual({ added: 1 });

    const answered = await app.inject({ method: "GET", url: "/api/v1/models/chat/series", headers: tokens.as(tokens.reader) });
    expect(answered.statusCode, answered.body).toBe(200);
    const chat = seriesViewSchema.parse(answered.json());
    expect(chat.model).toBe("chat");
    expect(chat.step_seconds).toBe(10);
    expect(chat.points).toHaveLength(360);
    const point = chat.points.find((candidate) => candidate.t === start);
    expect(point).toMatchObject({ requests_per_s: 1, errors_per_s: 0.1, tokens_per_s: 5 });
    expect(point?.latency_p50_ms).toBeGreaterThan(512);
    expect(point?.latency_p50_ms).toBeLessThanOrEqual(1024);
    expect(chat.points.filter((candidate) => candidate.t !== start).every((candidate) => candidate.latency_p95_ms === null)).toBe(true);

    const whole = (await app.inject({ method: "GET", url: "/api/v1/series", headers: tokens.as(tokens.reader) })).json();
    expect(whole.model).toBeUndefined();
    expect(whole.points.find((candidate: { t: number }) => candidate.t === start)?.requests_per_s).toBe(1);
  });

  it("refuses an unknown model, a malformed report, and a report from a read-only token", async () => {
    const unknown = await app.inject({ method: "GET", url: "/api/v1/models/ghost/series", headers: tokens.as(tokens.reader) });
    expect([unknown.statusCode, unknown.json().error.code]).toEqual([404, "model_not_found"]);
    const malformed = await app.inject({ method: "POST", url: "/api/v1/gateway/series", headers: tokens.as(tokens.admin), payload: { steps: [{ model: "chat", start: -1 }] } });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error.message).toContain("steps");
    const reader = await app.inject({ method: "POST", url: "/api/v1/gateway/series", headers: tokens.as(tokens.reader), payload: { steps: [] } });
    expect(reader.statusCode).toBe(403);
  });
});
