import { describe, expect, it } from "vitest";
import { cacheLocation, checksumFromHeaders, parseFolderListing, parseWeightsSource, selectHubFiles, shardsFromIndex } from "./weights-source.js";

describe("parseWeightsSource", () => {
  it("reads a file URL with a pinned sha256", () => {
    expect(parseWeightsSource(`https://mirror.example/m/model.gguf#sha256=${"AB".repeat(32)}`)).toEqual({
      kind: "http-file",
      url: "https://mirror.example/m/model.gguf",
      sha256: "ab".repeat(32),
    });
  });

  it("reads a URL ending in / as a folder", () => {
    expect(parseWeightsSource("http://10.0.0.1:8000/llama/")).toEqual({ kind: "http-folder", url: "http://10.0.0.1:8000/llama/" });
  });

  it("reads hf://org/name@revision/path, defaulting the revision to main", () => {
    expect(parseWeightsSource("hf://Qwen/Qwen2.5-7B-Instruct-GGUF@v1/qwen-q4_k_m.gguf")).toEqual({ kind: "hub", repo: "Qwen/Qwen2.5-7B-Instruct-GGUF", revision: "v1", path: "qwen-q4_k_m.gguf" });
    expect(parseWeightsSource("hf://meta-llama/Llama-3.1-8B")).toEqual({ kind: "hub", repo: "meta-llama/Llama-3.1-8B", revision: "main", path: "" });
  });

  it("uses local paths and file:// URLs in place", () => {
    expect(parseWeightsSource("/srv/models/llama")).toEqual({ kind: "local", path: "/srv/models/llama" });
    expect(parseWeightsSource("file:///srv/m.gguf")).toEqual({ kind: "local", path: "/srv/m.gguf" });
  });

  it("refuses schemes it cannot fetch and repositories without a name", () => {
    expect(() => parseWeightsSource("s3://bucket/model")).toThrow(/uses a scheme the agent cannot fetch/);
    expect(() => parseWeightsSource("hf://just-an-org")).toThrow(/does not name a repository/);
    expect(() => parseWeightsSource("hf://org/name@main/../../etc")).toThrow(/climbs out/);
  });
});

describe("cacheLocation", () => {
  it("keeps readable, safe paths under the cache", () => {
    expect(cacheLocation(parseWeightsSource("hf://org/name@v1"))).toBe("hf/org/name/v1");
    expect(cacheLocation(parseWeightsSource("https://host:8443/a b/../model.gguf"))).toBe("http/host_8443/model.gguf");
    expect(cacheLocation(parseWeightsSource("https://host/m.gguf?token=1"))).toMatch(/^http\/host\/m\.gguf_[0-9a-f]{8}$/);
  });
});

describe("parseFolderListing", () => {
  it("reads python http.server and nginx listings, direct children only", () => {
    const html = `<ul><li><a href="config.json">config.json</a></li><li><a href="model%2000001.safetensors">x</a></li>
      <li><a href="tokenizer/">tokenizer/</a></li><li><a href="../">../</a></li><li><a href="?C=M;O=A">sort</a></li>
      <li><a href="https://elsewhere.example/x">x</a></li><li><a href="/other/">other</a></li><li><a href="tokenizer/deep.json">deep</a></li></ul>`;
    expect(parseFolderListing(html, "http://h/models/m/")).toEqual({ files: ["config.json", "model 00001.safetensors"], folders: ["tokenizer"] });
  });
});

describe("checksums and indexes", () => {
  it("takes the hub's sha256 ETag and ignores opaque ones", () => {
    expect(checksumFromHeaders({ "x-linked-etag": `"${"a".repeat(64)}"` })).toBe("a".repeat(64));
    expect(checksumFromHeaders({ etag: 'W/"5f3a-17c"' })).toBeUndefined();
  });

  it("lists each shard of an index once", () => {
    expect(shardsFromIndex(JSON.stringify({ weight_map: { a: "m-2.safetensors", b: "m-1.safetensors", c: "m-2.safetensors" } }), "index")).toEqual(["m-1.safetensors", "m-2.safetensors"]);
  });

  it("keeps safetensors and small files of a repository, not the same weights in other formats", () => {
    expect(selectHubFiles([".gitattributes", "config.json", "model.safetensors", "pytorch_model.bin", "original/consolidated.00.pth", "model.Q4_K_M.gguf", "tokenizer.json"])).toEqual([
      "config.json",
      "model.safetensors",
      "tokenizer.json",
    ]);
    expect(selectHubFiles(["README.md", "model.Q4_K_M.gguf"])).toEqual(["README.md", "model.Q4_K_M.gguf"]);
  });
});
