import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, stat, statfs, truncate, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fetchWeights } from "./weights-fetcher.js";
import type { FetchProgress } from "./weights/fetch-options.js";
import { parseWeightsSource } from "../catalog/weights-source.js";
import { cacheLocation } from "./weights-source.js";
import { closeServer, listenOnLoopback } from "../../test/support/loopback-server.js";

interface RequestRecord {
  method: string;
  url: string;
  range: string | undefined;
}

/** A file server with the behaviours the fetcher must survive: ranges, cut connections, listings. */
class FileServer {
  readonly files = new Map<string, Buffer>();
  readonly requests: RequestRecord[] = [];
  /** Paths whose next GET is cut after this many bytes. */
  readonly cutAfter = new Map<string, number>();
  /** Paths whose GETs send this many bytes and then nothing more, holding the connection open. */
  readonly stallAfter = new Map<string, number>();
  /** Paths served as zeros of this size, too large to hold: only a range's last megabyte is ever sent. */
  readonly virtualSizes = new Map<string, number>();
  listings = true;
  /** Answers every GET whole (200), Range or not, as some proxies and static servers do. */
  ignoreRange = false;
  /** Paths whose 206 answers claim this total size in Content-Range, as a server whose file changed meanwhile does. */
  readonly claimedTotals = new Map<string, number>();
  /** Paths answered with this status, always. */
  readonly statuses = new Map<string, number>();
  /** When set, every request must carry this Basic login ("user:password"), as a private mirror asks. */
  requiredLogin: string | undefined;
  private server = http.createServer((request, response) => this.handle(request, response));
  url = "";

  async start(): Promise<void> {
    this.url = await listenOnLoopback(this.server);
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
  }

  private handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const pathname = decodeURIComponent(new URL(request.url ?? "/", this.url).pathname);
    this.requests.push({ method: request.method ?? "", url: pathname, range: request.headers.range });
    if (this.requiredLogin !== undefined && request.headers.authorization !== `Basic ${Buffer.from(this.requiredLogin).toString("base64")}`) {
      response.writeHead(401, { "www-authenticate": 'Basic realm="mirror"' }).end();
      return;
    }
    if (pathname.endsWith("/")) {
      const children = [...this.files.keys()].filter((file) => file.startsWith(pathname)).map((file) => file.slice(pathname.length));
      if (!this.listings || children.length === 0) {
        response.writeHead(this.listings ? 404 : 403).end();
        return;
      }
      const entries = new Set(children.map((child) => (child.includes("/") ? `${child.split("/")[0]}/` : child)));
      const links = [...entries].map((entry) => `<a href="${encodeURI(entry)}">${entry}</a>`).join("\n");
      // As nginx autoindex writes it, with a parent link and a sort link to skip.
      response.writeHead(200, { "content-type": "text/html" }).end(`<html><body><a href="../">../</a><a href="?C=N;O=D">Name</a>\n${links}</body></html>`);
      return;
    }
    const status = this.statuses.get(pathname);
    if (status !== undefined) {
      response.writeHead(status).end();
      return;
    }
    const virtualSize = this.virtualSizes.get(pathname);
    if (virtualSize !== undefined) {
      const start = Number(/^bytes=(\d+)-$/.exec(request.headers.range ?? "")?.[1] ?? 0);
      const headers: Record<string, string | number> = { "content-length": virtualSize - start };
      if (start > 0) headers["content-range"] = `bytes ${start}-${virtualSize - 1}/${virtualSize}`;
      response.writeHead(start > 0 ? 206 : 200, headers);
      // More than a megabyte is never sent: the connection breaks after the first byte.
      if (virtualSize - start <= 1_000_000) response.end(Buffer.alloc(virtualSize - start));
      else response.write(Buffer.alloc(1), () => response.destroy());
      return;
    }
    const content = this.files.get(pathname);
    if (!content) {
      response.writeHead(404).end("not found");
      return;
    }
    const etag = `"${createHash("md5").update(content).digest("hex")}"`;
    const range = this.ignoreRange ? null : /^bytes=(\d+)-$/.exec(request.headers.range ?? "");
    const start = range ? Number(range[1]) : 0;
    if (start >= content.length && range) {
      // As nginx answers a range that starts at or past the end.
      response.writeHead(416, { "content-range": `bytes */${content.length}` }).end();
      return;
    }
    const headers: Record<string, string | number> = { etag, "accept-ranges": "bytes", "content-length": content.length - start };
    if (range) headers["content-range"] = `bytes ${start}-${content.length - 1}/${this.claimedTotals.get(pathname) ?? content.length}`;
    response.writeHead(range ? 206 : 200, headers);
    if (request.method === "HEAD") {
      response.end();
      return;
    }
    const stall = this.stallAfter.get(pathname);
    if (stall !== undefined) {
      response.write(content.subarray(start, start + stall));
      return;
    }
    const cut = this.cutAfter.get(pathname);
    if (cut !== undefined) {
      this.cutAfter.delete(pathname);
      response.write(content.subarray(start, start + cut), () => {
        // Give the bytes time to reach the client before the connection drops, as a flaky proxy would.
        setTimeout(() => response.destroy(), 50);
      });
      return;
    }
    response.end(content.subarray(start));
  }
}

let server: FileServer;
let cacheDirectory: string;

beforeAll(async () => {
  server = new FileServer();
  await server.start();
});
afterAll(async () => {
  await server.stop();
});
beforeEach(async () => {
  cacheDirectory = await mkdtemp(path.join(os.tmpdir(), "llmgw-weights-"));
  server.files.clear();
  server.requests.length = 0;
  server.cutAfter.clear();
  server.stallAfter.clear();
  server.virtualSizes.clear();
  server.listings = true;
  server.ignoreRange = false;
  server.claimedTotals.clear();
  server.statuses.clear();
  server.requiredLogin = undefined;
});
afterEach(async () => {
  await rm(cacheDirectory, { recursive: true, force: true });
});

const baseOptions = () => ({ cacheDirectory, nodeName: "node-a", hubUrl: "http://127.0.0.1:1", hubToken: undefined, retryDelayMs: 10 });

describe("fetchWeights over http", () => {
  it("fetches one file and reports progress up to its size", async () => {
    const content = randomBytes(100_000);
    server.files.set("/models/tiny.gguf", content);
    const progress: FetchProgress[] = [];
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/models/tiny.gguf`, onProgress: (step) => progress.push(step) });
    expect(await readFile(weightsPath)).toEqual(content);
    expect(progress.at(-1)).toEqual({ bytesDone: 100_000, bytesTotal: 100_000 });
  });

  it("logs in to a mirror with the user and password in the source URL, for a file and a folder", async () => {
    server.requiredLogin = "robot:s3cret";
    server.files.set("/private/model.gguf", randomBytes(1000));
    server.files.set("/private/folder/config.json", Buffer.from("{}"));
    const withLogin = server.url.replace("http://", "http://robot:s3cret@");
    expect((await readFile(await fetchWeights({ ...baseOptions(), source: `${withLogin}/private/model.gguf` }))).length).toBe(1000);
    const folder = await fetchWeights({ ...baseOptions(), source: `${withLogin}/private/folder/` });
    expect(await readFile(path.join(folder, "config.json"), "utf8")).toBe("{}");
    // Without the login the mirror refuses, and the reason says so.
    await expect(fetchWeights({ ...baseOptions(), source: `${server.url}/private/other.gguf`, maxAttempts: 1 })).rejects.toThrow(/401/);
  });

  it("resumes with a Range request after the connection is cut mid-file", async () => {
    const content = randomBytes(300_000);
    server.files.set("/models/big.safetensors", content);
    server.cutAfter.set("/models/big.safetensors", 120_000);
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/models/big.safetensors` });
    expect(createHash("sha256").update(await readFile(weightsPath)).digest("hex")).toBe(createHash("sha256").update(content).digest("hex"));
    const gets = server.requests.filter((request) => request.method === "GET" && request.url === "/models/big.safetensors");
    expect(gets).toHaveLength(2);
    expect(gets[0]?.range).toBeUndefined();
    // It asks only for what it lacks: from the first byte it did not get.
    const resumedFrom = Number(/bytes=(\d+)-/.exec(gets[1]?.range ?? "")?.[1]);
    expect(resumedFrom).toBeGreaterThan(0);
    expect(resumedFrom).toBeLessThanOrEqual(120_000);
  });

  it("fetches a folder file by file from its autoindex listing, subfolders included", async () => {
    server.files.set("/models/llama/config.json", Buffer.from('{"a":1}'));
    server.files.set("/models/llama/model-00001-of-00002.safetensors", randomBytes(5000));
    server.files.set("/models/llama/model-00002-of-00002.safetensors", randomBytes(7000));
    server.files.set("/models/llama/tokenizer/tokenizer.json", Buffer.from("{}"));
    const progress: FetchProgress[] = [];
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/models/llama/`, onProgress: (step) => progress.push(step) });
    expect(await readFile(path.join(weightsPath, "config.json"), "utf8")).toBe('{"a":1}');
    expect(await readFile(path.join(weightsPath, "tokenizer", "tokenizer.json"), "utf8")).toBe("{}");
    expect((await readFile(path.join(weightsPath, "model-00002-of-00002.safetensors"))).length).toBe(7000);
    expect(progress.at(-1)).toEqual({ bytesDone: 12_009, bytesTotal: 12_009 });
  });

  it("fetches a folder without a listing from model.safetensors.index.json and its companions", async () => {
    server.listings = false;
    server.files.set("/m/model.safetensors.index.json", Buffer.from(JSON.stringify({ weight_map: { a: "model-1.safetensors", b: "model-2.safetensors", c: "model-1.safetensors" } })));
    server.files.set("/m/model-1.safetensors", Buffer.from("one"));
    server.files.set("/m/model-2.safetensors", Buffer.from("two"));
    server.files.set("/m/config.json", Buffer.from("{}"));
    server.files.set("/m/tokenizer.json", Buffer.from("{}"));
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/m/` });
    expect(await readFile(path.join(weightsPath, "model-2.safetensors"), "utf8")).toBe("two");
    expect(await readFile(path.join(weightsPath, "tokenizer.json"), "utf8")).toBe("{}");
  });

  it("refuses an index that names a shard outside its folder", async () => {
    server.listings = false;
    server.files.set("/evil/model.safetensors.index.json", Buffer.from(JSON.stringify({ weight_map: { a: "https://elsewhere.example/x.safetensors" } })));
    await expect(fetchWeights({ ...baseOptions(), source: `${server.url}/evil/` })).rejects.toThrow(/names a shard outside its folder/);
  });

  it("fails a source that answers 404 with a reason naming the URL and the node", async () => {
    const source = `${server.url}/models/missing.gguf`;
    await expect(fetchWeights({ ...baseOptions(), source })).rejects.toMatchObject({
      code: "source_unavailable",
      message: expect.stringContaining(`${source} on node node-a: the server answered 404`),
    });
  });

  it("keeps a source URL's password out of every failure reason, for a file and for a folder", async () => {
    const withPassword = (pathname: string) => server.url.replace("http://", "http://mirror:s3cret-pw@") + pathname;
    const failure = async (source: string): Promise<Error & { hint?: string }> => {
      try {
        await fetchWeights({ ...baseOptions(), source });
      } catch (error) {
        return error as Error & { hint?: string };
      }
      throw new Error(`${source} was fetched`);
    };
    const file = await failure(withPassword("/models/missing.gguf"));
    expect(file.message).toContain("could not fetch http://mirror:***@127.0.0.1:");
    server.listings = false;
    const folder = await failure(withPassword("/unlisted/"));
    expect(folder.message).toMatch(/could not fetch http:\/\/mirror:\*\*\*@127\.0\.0\.1:\d+\/unlisted\/ on node node-a: the folder has no listing and http:\/\/mirror:\*\*\*@/);
    server.files.set("/bad/model.safetensors.index.json", Buffer.from("not json"));
    const index = await failure(withPassword("/bad/"));
    expect(index.message).toContain("mirror:***@");
    const pinned = await failure(`${withPassword("/x.gguf")}#sha256=nothex`);
    expect(pinned.message).toContain("mirror:***@");
    for (const error of [file, folder, index, pinned]) {
      expect(error.message).not.toContain("s3cret-pw");
      expect(error.hint ?? "").not.toContain("s3cret-pw");
    }
  });

  it("names the folder, the node and what to check when the folder's server cannot be reached", async () => {
    // Port 9 (discard) listens nowhere here: the connection is refused.
    const error = await fetchWeights({ ...baseOptions(), source: "http://mirror:s3cret-pw@127.0.0.1:9/models/llama/" }).then(
      () => undefined,
      (caught: unknown) => caught as Error & { code: string; hint: string },
    );
    expect(error).toMatchObject({ code: "source_unavailable", message: expect.stringMatching(/^could not list http:\/\/mirror:\*\*\*@127\.0\.0\.1:9\/models\/llama\/ on node node-a: .*ECONNREFUSED/) });
    expect(error?.hint).toContain("reachable from this node");
  });

  it("refuses a single-URL download larger than the cache's free disk, before writing a byte", async () => {
    const disk = await statfs(cacheDirectory);
    server.virtualSizes.set("/models/huge.gguf", 2 * Number(disk.bavail) * Number(disk.bsize));
    const source = `${server.url}/models/huge.gguf`;
    await expect(fetchWeights({ ...baseOptions(), source })).rejects.toMatchObject({
      code: "source_unavailable",
      message: expect.stringMatching(new RegExp(`^${source} needs [0-9.]+ GiB but .* on node node-a has [0-9.]+ GiB free$`)),
    });
    const destination = path.join(cacheDirectory, cacheLocation(parseWeightsSource(source)));
    expect((await stat(`${destination}.partial`).catch(() => undefined))?.size ?? 0).toBe(0);
  });

  it("counts what a single-URL download's partial already holds when checking for room", async () => {
    // A sparse partial of twice the disk's free space lacking only its last 1000 bytes: it fits.
    const disk = await statfs(cacheDirectory);
    const size = 2 * Number(disk.bavail) * Number(disk.bsize);
    server.virtualSizes.set("/models/resumed.gguf", size);
    const source = `${server.url}/models/resumed.gguf`;
    const destination = path.join(cacheDirectory, cacheLocation(parseWeightsSource(source)));
    await mkdir(path.dirname(destination), { recursive: true });
    await writeFile(`${destination}.partial`, "");
    await truncate(`${destination}.partial`, size - 1000);
    expect((await stat(await fetchWeights({ ...baseOptions(), source }))).size).toBe(size);
  });

  it("refuses a file whose sha256 differs from the one pinned in the source, and keeps no file", async () => {
    server.files.set("/x.gguf", Buffer.from("tampered"));
    const pinned = createHash("sha256").update("original").digest("hex");
    await expect(fetchWeights({ ...baseOptions(), source: `${server.url}/x.gguf#sha256=${pinned}` })).rejects.toMatchObject({ code: "checksum_mismatch" });
    const good = createHash("sha256").update("tampered").digest("hex");
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/x.gguf#sha256=${good}` });
    expect(await readFile(weightsPath, "utf8")).toBe("tampered");
  });

  it("finishes a partial that already holds the whole file, as after an agent killed while checksumming it", async () => {
    const content = randomBytes(50_000);
    server.files.set("/models/done.gguf", content);
    const pin = createHash("sha256").update(content).digest("hex");
    const source = `${server.url}/models/done.gguf#sha256=${pin}`;
    const destination = path.join(cacheDirectory, cacheLocation(parseWeightsSource(source)));
    await mkdir(path.dirname(destination), { recursive: true });
    await writeFile(`${destination}.partial`, content);
    const weightsPath = await fetchWeights({ ...baseOptions(), source });
    expect(weightsPath).toBe(destination);
    expect(await readFile(weightsPath)).toEqual(content);
    await expect(stat(`${destination}.partial`)).rejects.toThrow(/ENOENT/);
    // Nothing was fetched again from the first byte.
    expect(server.requests.filter((request) => request.method === "GET" && request.range === undefined)).toEqual([]);
  });

  it("finishes a folder's shard whose partial already holds the whole file, instead of failing every restart", async () => {
    const shard = randomBytes(30_000);
    server.files.set("/models/sharded/model.safetensors", shard);
    const partial = path.join(cacheDirectory, cacheLocation(parseWeightsSource(`${server.url}/models/sharded/`)), "model.safetensors.partial");
    await mkdir(path.dirname(partial), { recursive: true });
    await writeFile(partial, shard);
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/models/sharded/` });
    expect(await readFile(path.join(weightsPath, "model.safetensors"))).toEqual(shard);
  });

  it("names the last problem when every attempt fails", async () => {
    server.files.set("/models/flaky.gguf", randomBytes(100_000));
    server.cutAfter.set("/models/flaky.gguf", 1000);
    // Even when told to make no attempt, it makes one and says why it failed.
    await expect(fetchWeights({ ...baseOptions(), source: `${server.url}/models/flaky.gguf`, maxAttempts: 0 })).rejects.toThrow(/after 1 attempt: the connection (broke|ended) after \d+/);
  });

  it("uses a cached file only when it matches the sha256 pinned in the source", async () => {
    server.files.set("/pinned.gguf", Buffer.from("tampered"));
    await fetchWeights({ ...baseOptions(), source: `${server.url}/pinned.gguf` });
    server.files.set("/pinned.gguf", Buffer.from("original"));
    const pin = createHash("sha256").update("original").digest("hex");
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/pinned.gguf#sha256=${pin}` });
    expect(await readFile(weightsPath, "utf8")).toBe("original");
  });

  it("stops a replica that waits on another replica's download when it is stopped, leaving the other's going", async () => {
    server.files.set("/shared/slow.gguf", randomBytes(200_000));
    server.stallAfter.set("/shared/slow.gguf", 1000);
    const source = `${server.url}/shared/slow.gguf`;
    const first = new AbortController();
    const second = new AbortController();
    let firstSettled = false;
    const firstFetch = fetchWeights({ ...baseOptions(), source, signal: first.signal }).finally(() => {
      firstSettled = true;
    });
    firstFetch.catch(() => undefined);
    const secondFetch = fetchWeights({ ...baseOptions(), source, signal: second.signal });
    second.abort();
    await expect(secondFetch).rejects.toMatchObject({ name: "AbortError" });
    expect(firstSettled).toBe(false);
    first.abort();
    await expect(firstFetch).rejects.toMatchObject({ name: "AbortError" });
  });

  it("shares one download between two replicas of the same source", async () => {
    server.files.set("/shared/model.gguf", randomBytes(200_000));
    const [first, second] = await Promise.all([
      fetchWeights({ ...baseOptions(), source: `${server.url}/shared/model.gguf` }),
      fetchWeights({ ...baseOptions(), source: `${server.url}/shared/model.gguf` }),
    ]);
    expect(first).toBe(second);
    expect(server.requests.filter((request) => request.method === "GET" && request.url === "/shared/model.gguf")).toHaveLength(1);
  });

  it("does not fetch again what is already complete in the cache", async () => {
    server.files.set("/f/config.json", Buffer.from("{}"));
    await fetchWeights({ ...baseOptions(), source: `${server.url}/f/` });
    server.requests.length = 0;
    await fetchWeights({ ...baseOptions(), source: `${server.url}/f/` });
    expect(server.requests).toEqual([]);
  });

  it("uses a local path in place, and names the node when it is missing", async () => {
    const local = path.join(cacheDirectory, "local.gguf");
    await writeFile(local, "x");
    expect(await fetchWeights({ ...baseOptions(), source: local })).toBe(local);
    await expect(fetchWeights({ ...baseOptions(), source: "/nowhere/model.gguf" })).rejects.toThrow(/\/nowhere\/model.gguf does not exist on node node-a/);
  });
});

describe("fetchWeights from a Hugging Face hub", () => {
  let hub: http.Server;
  let hubUrl = "";
  const shard = randomBytes(4096);
  const shardSha256 = createHash("sha256").update(shard).digest("hex");
  const hubFiles: Record<string, Buffer> = {
    "config.json": Buffer.from('{"model_type":"llama"}'),
    "model.safetensors": shard,
    "pytorch_model.bin": Buffer.from("duplicate weights, never wanted"),
    "original/consolidated.pth": Buffer.from("duplicate"),
  };
  let authorization: string | undefined;
  let resumedSize = 0;

  beforeAll(async () => {
    hub = http.createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://x");
      authorization = request.headers.authorization;
      if (url.pathname === "/api/models/org/huge/tree/v1") {
        // A petabyte checkpoint: no disk here holds it.
        const entries = [{ type: "file", path: "model.safetensors", size: 130, oid: "1".repeat(40), lfs: { oid: "2".repeat(64), size: 10 ** 15, pointerSize: 130 } }];
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(entries));
        return;
      }
      if (url.pathname === "/api/models/org/resumed/tree/v1") {
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify([{ type: "file", path: "model.safetensors", size: resumedSize, oid: "3".repeat(40) }]));
        return;
      }
      if (url.pathname === "/org/resumed/resolve/v1/model.safetensors") {
        // Only the tail the partial lacks is ever asked for; it is zeros, like the sparse partial.
        const start = Number(/^bytes=(\d+)-$/.exec(request.headers.range ?? "")?.[1] ?? Number.NaN);
        if (!(resumedSize - start <= 1_000_000)) {
          response.writeHead(400).end();
          return;
        }
        response.writeHead(206, { "content-length": resumedSize - start, "content-range": `bytes ${start}-${resumedSize - 1}/${resumedSize}` }).end(Buffer.alloc(resumedSize - start));
        return;
      }
      if (url.pathname === "/api/models/org/tiny/tree/v1") {
        const entries = [
          ...Object.entries(hubFiles).map(([file, content]) => ({
            type: "file",
            path: file,
            size: content.length,
            oid: "0".repeat(40),
            ...(file.endsWith(".safetensors") ? { lfs: { oid: shardSha256, size: content.length, pointerSize: 130 } } : {}),
          })),
        ];
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(entries));
        return;
      }
      const resolve = /^\/org\/tiny\/resolve\/v1\/(.+)$/.exec(url.pathname);
      const content = resolve ? hubFiles[decodeURIComponent(resolve[1] ?? "")] : undefined;
      if (!content) {
        response.writeHead(404, { "content-type": "application/json" }).end('{"error":"Repository not found"}');
        return;
      }
      response.writeHead(200, { "content-length": content.length }).end(content);
    });
    hubUrl = await listenOnLoopback(hub);
  });
  afterAll(async () => {
    await closeServer(hub);
  });

  it("fetches the safetensors and small files of hf://org/name@revision, skipping duplicate formats", async () => {
    const weightsPath = await fetchWeights({ ...baseOptions(), hubUrl, hubToken: "hf_secret", source: "hf://org/tiny@v1" });
    expect(await readFile(path.join(weightsPath, "model.safetensors"))).toEqual(shard);
    await expect(readFile(path.join(weightsPath, "pytorch_model.bin"))).rejects.toThrow();
    expect(authorization).toBe("Bearer hf_secret");
  });

  it("fetches one named file of a repository as a file", async () => {
    const weightsPath = await fetchWeights({ ...baseOptions(), hubUrl, source: "hf://org/tiny@v1/config.json" });
    expect(await readFile(weightsPath, "utf8")).toBe('{"model_type":"llama"}');
  });

  it("refuses a download larger than the cache's free disk before fetching a byte", async () => {
    await expect(fetchWeights({ ...baseOptions(), hubUrl, source: "hf://org/huge@v1" })).rejects.toThrow(/needs 931322\.6 GiB but .* on node node-a has [0-9.]+ GiB free/);
  });

  it("counts what a resumed download already has on disk when checking for room", async () => {
    // A partial of twice the disk's free space, sparse, so it takes no room: only its last 1000 bytes are missing.
    const disk = await statfs(cacheDirectory);
    resumedSize = 2 * Number(disk.bavail) * Number(disk.bsize);
    const partial = path.join(cacheDirectory, "hf", "org", "resumed", "v1", "model.safetensors.partial");
    await mkdir(path.dirname(partial), { recursive: true });
    await writeFile(partial, "");
    await truncate(partial, resumedSize - 1000);
    const weightsPath = await fetchWeights({ ...baseOptions(), hubUrl, source: "hf://org/resumed@v1" });
    expect((await stat(path.join(weightsPath, "model.safetensors"))).size).toBe(resumedSize);
  });

  it("names the repository, revision and hub when the repository is unknown", async () => {
    await expect(fetchWeights({ ...baseOptions(), hubUrl, source: "hf://org/absent@v1" })).rejects.toThrow(
      new RegExp(`hf://org/absent@v1 at ${hubUrl} on node node-a: the hub answered 404`),
    );
  });
});

describe("fetchWeights from a mirror: resume and published checksums", () => {
  const sha256 = (content: Buffer | string) => createHash("sha256").update(content).digest("hex");
  const gets = (pathname: string) => server.requests.filter((request) => request.method === "GET" && request.url === pathname);
  const leftovers = async (directory: string): Promise<string[]> => {
    const { readdir } = await import("node:fs/promises");
    return (await readdir(directory, { recursive: true })).map(String).filter((name) => name.endsWith(".partial") || name.endsWith(".partial.json"));
  };

  it("resumes a download cut halfway with a Range request and ends with the sha256 the mirror publishes beside it", async () => {
    const content = randomBytes(400_000);
    server.files.set("/mirror/qwen.gguf", content);
    server.files.set("/mirror/qwen.gguf.sha256", Buffer.from(`${sha256(content)}  qwen.gguf\n`));
    server.cutAfter.set("/mirror/qwen.gguf", 200_000);
    const progress: FetchProgress[] = [];
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/qwen.gguf`, onProgress: (step) => progress.push(step) });
    expect(sha256(await readFile(weightsPath))).toBe(sha256(content));
    const [first, second, ...more] = gets("/mirror/qwen.gguf");
    expect(more).toEqual([]);
    expect(first?.range).toBeUndefined();
    const resumedFrom = Number(/^bytes=(\d+)-$/.exec(second?.range ?? "")?.[1]);
    // The second request asked only for the bytes the first did not deliver.
    expect(resumedFrom).toBeGreaterThan(0);
    expect(resumedFrom).toBeLessThanOrEqual(200_000);
    expect(gets("/mirror/qwen.gguf.sha256")).toHaveLength(1);
    expect(progress.at(-1)).toEqual({ bytesDone: 400_000, bytesTotal: 400_000 });
    expect(await leftovers(cacheDirectory)).toEqual([]);
  });

  it("refuses a file whose .sha256 differs, naming the file and both sums, and leaves nothing in the cache", async () => {
    const content = randomBytes(50_000);
    const published = sha256("another file");
    server.files.set("/mirror/bad.gguf", content);
    server.files.set("/mirror/bad.gguf.sha256", Buffer.from(`${published} *bad.gguf\n`));
    const source = `${server.url}/mirror/bad.gguf`;
    const failure = fetchWeights({ ...baseOptions(), source });
    await expect(failure).rejects.toMatchObject({ code: "checksum_mismatch" });
    await expect(failure).rejects.toThrow(new RegExp(`${source.replace(/[.]/g, "\\.")} fetched on node node-a has sha256 ${sha256(content)}, but the source published ${published}`));
    const destination = path.join(cacheDirectory, cacheLocation(parseWeightsSource(source)));
    await expect(stat(destination)).rejects.toThrow(/ENOENT/);
    expect(await leftovers(cacheDirectory)).toEqual([]);
  });

  it("refuses a .sha256 that is not a checksum (an error page in its place) before fetching the file", async () => {
    server.files.set("/mirror/page.gguf", randomBytes(1000));
    server.files.set("/mirror/page.gguf.sha256", Buffer.from("<html>Login required</html>"));
    await expect(fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/page.gguf` })).rejects.toThrow(/page\.gguf\.sha256 is not in sha256sum format/);
    expect(gets("/mirror/page.gguf")).toEqual([]);
  });

  it("starts over cleanly when the server ignores Range and sends the whole file again", async () => {
    const content = randomBytes(300_000);
    server.ignoreRange = true;
    server.files.set("/mirror/norange.gguf", content);
    server.files.set("/mirror/norange.gguf.sha256", Buffer.from(`${sha256(content)}  norange.gguf\n`));
    server.cutAfter.set("/mirror/norange.gguf", 150_000);
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/norange.gguf` });
    // Appending the whole file to the half already there would double it; the partial was overwritten instead.
    expect((await readFile(weightsPath)).length).toBe(300_000);
    expect(sha256(await readFile(weightsPath))).toBe(sha256(content));
    expect(gets("/mirror/norange.gguf")[1]?.range).toMatch(/^bytes=\d+-$/);
  });

  it("resumes from the partial on disk after the agent stopped mid-download", async () => {
    const content = randomBytes(300_000);
    server.files.set("/mirror/restart.gguf", content);
    server.files.set("/mirror/restart.gguf.sha256", Buffer.from(sha256(content)));
    server.stallAfter.set("/mirror/restart.gguf", 100_000);
    const source = `${server.url}/mirror/restart.gguf`;
    const stopped = new AbortController();
    let seen = 0;
    const first = fetchWeights({ ...baseOptions(), source, signal: stopped.signal, onProgress: (step) => (seen = step.bytesDone) });
    first.catch(() => undefined);
    for (let waited = 0; seen < 100_000 && waited < 200; waited += 1) await new Promise((resolve) => setTimeout(resolve, 25));
    stopped.abort();
    await expect(first).rejects.toMatchObject({ name: "AbortError" });
    server.stallAfter.clear();
    const weightsPath = await fetchWeights({ ...baseOptions(), source });
    expect(sha256(await readFile(weightsPath))).toBe(sha256(content));
    expect(gets("/mirror/restart.gguf").at(-1)?.range).toBe("bytes=100000-");
  });

  it("uses a folder listing's .sha256 files as the sums of their neighbours, not as files of the model", async () => {
    const shard = randomBytes(20_000);
    server.files.set("/mirror/folder/config.json", Buffer.from("{}"));
    server.files.set("/mirror/folder/model.safetensors", shard);
    server.files.set("/mirror/folder/model.safetensors.sha256", Buffer.from(`${sha256(shard)}  model.safetensors\n`));
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/folder/` });
    expect(await readFile(path.join(weightsPath, "model.safetensors"))).toEqual(shard);
    await expect(stat(path.join(weightsPath, "model.safetensors.sha256"))).rejects.toThrow(/ENOENT/);
    // config.json has no sum listed beside it: none is asked for.
    expect(gets("/mirror/folder/config.json.sha256")).toEqual([]);

    server.files.set("/mirror/folder2/model.safetensors", shard);
    server.files.set("/mirror/folder2/model.safetensors.sha256", Buffer.from(`${sha256("other")}  model.safetensors\n`));
    await expect(fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/folder2/` })).rejects.toMatchObject({ code: "checksum_mismatch" });
  });

  it("checks the shards of a folder without a listing against the .sha256 beside each", async () => {
    server.listings = false;
    const shard = Buffer.from("the shard's bytes");
    server.files.set("/mirror/indexed/model.safetensors.index.json", Buffer.from(JSON.stringify({ weight_map: { a: "model-1.safetensors" } })));
    server.files.set("/mirror/indexed/model-1.safetensors", shard);
    server.files.set("/mirror/indexed/model-1.safetensors.sha256", Buffer.from(`${sha256("not the shard")}  model-1.safetensors\n`));
    await expect(fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/indexed/` })).rejects.toThrow(/model-1\.safetensors fetched on node node-a has sha256/);
    server.files.set("/mirror/indexed/model-1.safetensors.sha256", Buffer.from(`${sha256(shard)}  model-1.safetensors\n`));
    const weightsPath = await fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/indexed/` });
    expect(await readFile(path.join(weightsPath, "model-1.safetensors"), "utf8")).toBe("the shard's bytes");
  });

  it("lets a second caller of a download in progress watch its progress", async () => {
    server.files.set("/mirror/watched.gguf", randomBytes(200_000));
    const source = `${server.url}/mirror/watched.gguf`;
    const watched: FetchProgress[] = [];
    const [first, second] = await Promise.all([fetchWeights({ ...baseOptions(), source }), fetchWeights({ ...baseOptions(), source, onProgress: (step) => watched.push(step) })]);
    expect(first).toBe(second);
    expect(watched.at(-1)).toEqual({ bytesDone: 200_000, bytesTotal: 200_000 });
    expect(gets("/mirror/watched.gguf")).toHaveLength(1);
  });

  it("starts over from zero when the resumed range belongs to a file of another size", async () => {
    const content = randomBytes(200_000);
    server.files.set("/mirror/changed.gguf", content);
    server.cutAfter.set("/mirror/changed.gguf", 80_000);
    // The resume is answered as the tail of a larger file: appending it would mix two versions.
    server.claimedTotals.set("/mirror/changed.gguf", 250_000);
    const fetching = fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/changed.gguf` });
    const weightsPath = await fetching;
    expect(sha256(await readFile(weightsPath))).toBe(sha256(content));
    const ranges = gets("/mirror/changed.gguf").map((request) => request.range);
    expect(ranges[0]).toBeUndefined();
    expect(ranges[1]).toMatch(/^bytes=\d+-$/);
    // Refused, and fetched again from the first byte.
    expect(ranges[2]).toBeUndefined();
  });

  it("fails, naming the checksum file, when the mirror cannot serve it, rather than fetch unchecked", async () => {
    server.files.set("/mirror/flaky-sum.gguf", randomBytes(1000));
    server.statuses.set("/mirror/flaky-sum.gguf.sha256", 503);
    const source = `${server.url}/mirror/flaky-sum.gguf`;
    await expect(fetchWeights({ ...baseOptions(), source, maxAttempts: 2 })).rejects.toThrow(`could not read the checksum ${source}.sha256 on node node-a: the server answered 503`);
    expect(gets("/mirror/flaky-sum.gguf")).toEqual([]);
    expect(gets("/mirror/flaky-sum.gguf.sha256")).toHaveLength(2);
  });

  it("takes a 403 for the checksum file as none published, as buckets answer for a missing key", async () => {
    server.files.set("/mirror/bucket.gguf", Buffer.from("weights"));
    server.statuses.set("/mirror/bucket.gguf.sha256", 403);
    expect(await readFile(await fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/bucket.gguf` }), "utf8")).toBe("weights");
  });

  it("refuses a checksum file too large to be one", async () => {
    server.files.set("/mirror/huge-sum.gguf", Buffer.from("weights"));
    server.files.set("/mirror/huge-sum.gguf.sha256", Buffer.alloc(2 * 1024 * 1024, "a"));
    await expect(fetchWeights({ ...baseOptions(), source: `${server.url}/mirror/huge-sum.gguf` })).rejects.toThrow(/huge-sum\.gguf\.sha256 is 2097152 bytes, too large for a checksum file/);
  });
});

