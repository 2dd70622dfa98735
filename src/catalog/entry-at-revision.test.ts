import { describe, expect, it } from "vitest";
import { entryAtRevision, revisionedRepo } from "./entry-at-revision.js";
import type { ModelEntry } from "./schema.js";
import { thrownBy } from "../../test/support/refusal.js";
import { DomainError } from "../errors/domain-error.js";

const qwen: ModelEntry = {
  name: "qwen",
  origin: "hf://Qwen/Qwen2.5-7B-Instruct@aaa111",
  profiles: [
    { name: "gpu", engine: "vllm", source: "hf://Qwen/Qwen2.5-7B-Instruct@aaa111", gpus: 1 },
    { name: "plain-id", engine: "sglang", source: "Qwen/Qwen2.5-7B-Instruct", gpus: 1 },
    { name: "cpu", engine: "llamacpp", source: "hf://Qwen/Qwen2.5-7B-Instruct-GGUF@v1/q4_k_m.gguf" },
  ],
};

describe("entryAtRevision", () => {
  it("moves the origin and every profile loading from its repository, in the form each was written", () => {
    const moved = entryAtRevision(qwen, "bbb222");
    expect(moved.origin).toBe("hf://Qwen/Qwen2.5-7B-Instruct@bbb222");
    expect(moved.profiles?.map((profile) => profile.source)).toEqual([
      "hf://Qwen/Qwen2.5-7B-Instruct@bbb222",
      "Qwen/Qwen2.5-7B-Instruct@bbb222",
      // Another repository's file: its revisions are not the origin's.
      "hf://Qwen/Qwen2.5-7B-Instruct-GGUF@v1/q4_k_m.gguf",
    ]);
    expect(qwen.origin).toBe("hf://Qwen/Qwen2.5-7B-Instruct@aaa111");
  });

  it("follows the one repository all profiles share when there is no origin", () => {
    const entry: ModelEntry = { name: "m", profiles: [{ engine: "vllm", source: "hf://org/m/sub", gpus: 1 }] };
    expect(revisionedRepo(entry)?.repo).toBe("org/m");
    expect(entryAtRevision(entry, "v2").profiles?.[0]?.source).toBe("hf://org/m@v2/sub");
  });

  it("refuses a model that follows no hub repository, saying how to give it one", () => {
    const entry: ModelEntry = { name: "local", profiles: [{ engine: "vllm", source: "/srv/models/m", gpus: 1 }] };
    const error = thrownBy(DomainError, () => entryAtRevision(entry, "v2"));
    expect(error.message).toContain("local does not follow a hub repository");
    expect(error.hint).toContain("ctl model origin");
  });
});
