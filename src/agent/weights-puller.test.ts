import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FetchStatus } from "../protocol/agent-protocol.js";
import { WeightsPuller } from "./weights-puller.js";
import { closeServer, listenOnLoopback } from "../../test/support/loopback-server.js";

const weights = randomBytes(64_000);
let server: http.Server;
let baseUrl = "";
let cacheDirectory: string;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    if (request.url === "/mirror/model.gguf") {
      response.writeHead(200, { "content-length": weights.length }).end(weights);
      return;
    }
    if (request.url === "/mirror/model.gguf.sha256") {
      response.writeHead(200).end(`${createHash("sha256").update(weights).digest("hex")}  model.gguf\n`);
      return;
    }
    response.writeHead(404).end();
  });
  baseUrl = await listenOnLoopback(server);
});
afterAll(async () => {
  await closeServer(server);
});
beforeEach(async () => {
  cacheDirectory = await mkdtemp(path.join(os.tmpdir(), "llmgw-puller-"));
});
afterEach(async () => {
  await rm(cacheDirectory, { recursive: true, force: true });
});

const puller = (pretend = false) =>
  new WeightsPuller({ nodeName: "node-a", cacheDirectory, hubUrl: "http://127.0.0.1:1", hubToken: undefined, pretend, logger: pino({ level: "silent" }) });

async function settled(subject: WeightsPuller, source: string): Promise<FetchStatus> {
  for (let waited = 0; waited < 400; waited += 1) {
    const status = subject.list().find((each) => each.source === source);
    if (status && status.state !== "fetching") return status;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${source} still fetching after 10 s`);
}

describe("WeightsPuller", () => {
  it("fetches a source into the cache, then answers a second pull at once as already cached", async () => {
    const subject = puller();
    const source = `${baseUrl}/mirror/model.gguf`;
    expect(await subject.pull(source)).toMatchObject({ source, state: "fetching" });
    expect(await settled(subject, source)).toMatchObject({ state: "cached", size_bytes: 64_000, bytes_done: 64_000, already_cached: false });
    expect(await subject.pull(source)).toMatchObject({ state: "cached", size_bytes: 64_000, already_cached: true });
    // A restarted agent knows no pulls, and still finds the weights in the cache.
    expect(await puller().pull(source)).toMatchObject({ state: "cached", already_cached: true });
    const cached = (await readFile(path.join(cacheDirectory, "http", new URL(baseUrl).host.replace(":", "_"), "mirror", "model.gguf"))).length;
    expect(cached).toBe(64_000);
  });

  it("reports a source it could not fetch as failed, with the fetcher's reason, and tries again when asked again", async () => {
    const subject = puller();
    const source = `${baseUrl}/mirror/missing.gguf`;
    await subject.pull(source);
    const failed = await settled(subject, source);
    expect(failed).toMatchObject({ state: "failed", reason: expect.stringContaining(`${source} on node node-a: the server answered 404`) });
    expect(await subject.pull(source)).toMatchObject({ state: "fetching" });
    await settled(subject, source);
  });

  it("refuses a source it cannot read at all, such as a mirror: source nobody resolved", async () => {
    await expect(puller().pull("mirror:gguf/model.gguf")).rejects.toMatchObject({ code: "invalid_input", message: expect.stringContaining("no mirror is configured") });
  });

  it("answers at once, saying so, on a simulated agent that does not fetch", async () => {
    expect(await puller(true).pull(`${baseUrl}/mirror/model.gguf`)).toMatchObject({ state: "cached", simulated: true, size_bytes: 0 });
  });
});
