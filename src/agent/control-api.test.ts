import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readErrorBody } from "../protocol/error-body.js";
import { buildControlApi } from "./control-api.js";
import type { ReplicaSupervisor } from "./replica-supervisor.js";
import type { WeightsPuller } from "./weights-puller.js";

/**
 * The agent's control API answers what its router and Node's HTTP parser
 * refuse in the same error body as every other llmgw answer, so the server
 * calling it reads a reason rather than fastify's own shape or a reset.
 */
let url: string;
let close: () => Promise<void>;

beforeAll(async () => {
  // No route below reaches the supervisor: each request is refused before it.
  const app = buildControlApi({ supervisor: {} as ReplicaSupervisor, puller: {} as WeightsPuller, nodeName: "node-a", credential: () => "node-credential", controlSecretHash: () => undefined, onChange: () => undefined });
  url = await app.listen({ host: "127.0.0.1", port: 0 });
  close = () => app.close();
});

afterAll(async () => {
  await close();
});

function rawRequest(text: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => socket.end(text));
    let answer = "";
    socket.on("data", (chunk) => (answer += chunk.toString()));
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
  });
}

describe("the agent's control API at its edges", () => {
  it("answers a bad percent-escape in a path with the error body, naming the fix", async () => {
    const answer = await fetch(`${url}/agent/v1/replicas/%E0%A4%A`, { headers: { authorization: "Bearer node-credential" } });
    expect(answer.status).toBe(400);
    expect(readErrorBody(await answer.text())).toMatchObject({ code: "invalid_input", hint: expect.stringContaining("encodeURIComponent") });
  });

  it("answers headers past Node's limit with 431 and the error body, not a reset", async () => {
    const answer = await rawRequest(`GET /agent/v1/replicas HTTP/1.1\r\nhost: x\r\nx-padding: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(readErrorBody(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toMatchObject({ code: "headers_too_large" });
  });

  it("refuses a fetch with no source, or of another protocol version, before the puller is asked", async () => {
    const post = (body: unknown) =>
      fetch(`${url}/agent/v1/fetches`, { method: "POST", headers: { authorization: "Bearer node-credential", "content-type": "application/json" }, body: JSON.stringify(body) });
    const missing = await post({ protocol: 1 });
    expect(missing.status).toBe(400);
    expect(readErrorBody(await missing.text())).toMatchObject({ code: "invalid_input", message: expect.stringContaining("source") });
    const newer = await post({ protocol: 2, source: "https://mirror/x.gguf" });
    expect(readErrorBody(await newer.text())).toMatchObject({ code: "version_unsupported", message: expect.stringContaining("agent protocol 1") });
  });
});

