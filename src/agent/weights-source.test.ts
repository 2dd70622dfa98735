import { describe, expect, it } from "vitest";
import { parseWeightsSource } from "../catalog/weights-source.js";
import { cacheLocation, checksumFromHeaders, parseFolderListing, selectHubFiles, sha256FromChecksumFile, shardsFromIndex } from "./weights-source.js";

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

  it("reads a .sha256 in sha256sum's formats, and picks this file's line from a list", () => {
    const a = "a".repeat(64);
    const b = "B".repeat(64);
    expect(sha256FromChecksumFile(`${a}  model.gguf\n`, "model.gguf", "x")).toBe(a);
    expect(sha256FromChecksumFile(`${b} *model.gguf`, "model.gguf", "x")).toBe("b".repeat(64));
    expect(sha256FromChecksumFile(`${a}\n`, "model.gguf", "x")).toBe(a);
    expect(sha256FromChecksumFile(`${a}  other.gguf\n${b}  ./sub/model.gguf\n`, "model.gguf", "x")).toBe("b".repeat(64));
  });

  it("refuses a .sha256 that is not one, or lists no sum for the file", () => {
    expect(() => sha256FromChecksumFile("<html>404</html>", "m.gguf", "https://m/m.gguf.sha256")).toThrow(/m\.gguf\.sha256 is not in sha256sum format/);
    expect(() => sha256FromChecksumFile("", "m.gguf", "here")).toThrow(/not in sha256sum format/);
    expect(() => sha256FromChecksumFile(`${"a".repeat(64)}  x\n${"b".repeat(64)}  y\n`, "m.gguf", "here")).toThrow(/lists 2 sums and none for m\.gguf/);
  });
});
