import { describe, expect, it } from "vitest";
import { poolingRunner } from "./engine-routes.js";

describe("poolingRunner", () => {
  it("reads vLLM's --runner pooling, its older --task and its --convert, in either spelling, the last one given winning", () => {
    expect(poolingRunner("vllm", ["serve", "/w", "--runner", "pooling"])?.flag).toBe("--runner pooling");
    expect(poolingRunner("vllm", ["serve", "/w", "--runner=pooling"])?.routes).toEqual(["embeddings", "rerank", "score"]);
    expect(poolingRunner("vllm", ["serve", "/w", "--task", "score"])?.flag).toBe("--task score");
    expect(poolingRunner("vllm", ["serve", "/w", "--task=embed"])?.flag).toBe("--task embed");
    expect(poolingRunner("vllm", ["serve", "/w", "--convert", "classify"])?.flag).toBe("--convert classify");
    expect(poolingRunner("vllm", ["serve", "/w", "--runner", "pooling", "--runner", "generate"])).toBeUndefined();
    expect(poolingRunner("vllm", ["serve", "/w", "--task", "generate"])).toBeUndefined();
    expect(poolingRunner("vllm", ["serve", "/w", "--max-model-len", "4096"])).toBeUndefined();
  });

  it("reads SGLang's --is-embedding and llama-server's --embedding and --reranking", () => {
    expect(poolingRunner("sglang", ["--is-embedding"])).toEqual({ flag: "--is-embedding", routes: ["embeddings", "rerank"] });
    expect(poolingRunner("llamacpp", ["--embeddings"])).toEqual({ flag: "--embeddings", routes: ["embeddings"] });
    expect(poolingRunner("llamacpp", ["--embedding", "--reranking"])).toEqual({ flag: "--reranking", routes: ["rerank"] });
    expect(poolingRunner("llamacpp", ["--ctx-size", "4096"])).toBeUndefined();
  });

  it("finds nothing to pool on engines that only generate or draw", () => {
    expect(poolingRunner("trtllm", ["--runner", "pooling"])).toBeUndefined();
    expect(poolingRunner("comfyui", ["--embedding"])).toBeUndefined();
  });
});
