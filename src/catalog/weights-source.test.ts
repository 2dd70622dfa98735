import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseWeightsSource } from "./weights-source.js";

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
    expect(() => parseWeightsSource("s3://bucket/model")).toThrow(/uses a scheme llmgw cannot fetch/);
    expect(() => parseWeightsSource("hf://just-an-org")).toThrow(/does not name a repository/);
    expect(() => parseWeightsSource("hf://org/name@main/../../etc")).toThrow(/climbs out/);
  });
});

describe("one grammar for the planner, the source check and the agent", () => {
  it("reads org/name[@revision] as the hub repository hf://org/name[@revision]", () => {
    expect(parseWeightsSource("Qwen/Qwen2.5-7B-Instruct@a09a354")).toEqual(parseWeightsSource("hf://Qwen/Qwen2.5-7B-Instruct@a09a354"));
    expect(parseWeightsSource("Qwen/Qwen2.5-7B-Instruct")).toEqual({ kind: "hub", repo: "Qwen/Qwen2.5-7B-Instruct", revision: "main", path: "" });
  });

  it("reads a relative path only when it says so with ./", () => {
    expect(parseWeightsSource("./models/llama")).toEqual({ kind: "local", path: path.resolve("models/llama") });
    expect(parseWeightsSource("models/llama").kind).toBe("hub");
  });

  it("resolves mirror:path against an http mirror, keeping a folder's trailing slash", () => {
    const mirror = { mirror: "https://mirror.internal/models" };
    expect(parseWeightsSource("mirror:qwen2.5-7b/", mirror)).toEqual({ kind: "http-folder", url: "https://mirror.internal/models/qwen2.5-7b/" });
    expect(parseWeightsSource("mirror:gguf/q4.gguf", mirror)).toMatchObject({ kind: "http-file", url: "https://mirror.internal/models/gguf/q4.gguf" });
  });

  it("resolves mirror:path against a mirror folder on disk", () => {
    expect(parseWeightsSource("mirror:qwen/", { mirror: "/srv/mirror" })).toEqual({ kind: "local", path: "/srv/mirror/qwen" });
  });

  it("refuses mirror: with no mirror configured, or climbing out of it, saying what to set", () => {
    expect(() => parseWeightsSource("mirror:qwen/")).toThrow(/no mirror is configured/);
    expect(() => parseWeightsSource("mirror:../etc/", { mirror: "/srv/mirror" })).toThrow(/no \.\. segments/);
  });
});
