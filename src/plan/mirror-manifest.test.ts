import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelEntry } from "../catalog/schema.js";
import { isDomainError } from "../errors/domain-error.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";
import { entryFromMirror, mirroredSource, mirrorKey, parseMirrorManifest, readMirrorManifest, type MirrorManifest } from "./mirror-manifest.js";

const sum = "a".repeat(64);
const manifest: MirrorManifest = {
  format: 1,
  sources: {
    "hf://Qwen/Qwen2.5-7B-Instruct@main": { mirror_source: "mirror:hf/Qwen/Qwen2.5-7B-Instruct/main/", commit: "c".repeat(40), pulled_at: "2026-12-07T00:00:00Z", files: [{ path: "hf/Qwen/Qwen2.5-7B-Instruct/main/config.json", bytes: 10, sha256: sum }] },
    "hf://Qwen/Qwen2.5-7B-Instruct-GGUF@main/q4.gguf": { mirror_source: "mirror:hf/Qwen/Qwen2.5-7B-Instruct-GGUF/main/q4.gguf", commit: "d".repeat(40), pulled_at: "2026-12-07T00:00:00Z", files: [] },
  },
};

async function refusalOf(work: () => Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await work();
  } catch (error) {
    if (isDomainError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("the mirror's manifest", () => {
  it("finds a hub source however it is written", () => {
    expect(mirrorKey("Qwen/Qwen2.5-7B-Instruct")).toBe("hf://Qwen/Qwen2.5-7B-Instruct@main");
    expect(mirroredSource("hf://Qwen/Qwen2.5-7B-Instruct", manifest)).toBe("mirror:hf/Qwen/Qwen2.5-7B-Instruct/main/");
    expect(mirroredSource("Qwen/Qwen2.5-7B-Instruct@main", manifest)).toBe("mirror:hf/Qwen/Qwen2.5-7B-Instruct/main/");
    // Another revision is another source: the mirror holds main only.
    expect(mirroredSource("hf://Qwen/Qwen2.5-7B-Instruct@v2", manifest)).toBe("hf://Qwen/Qwen2.5-7B-Instruct@v2");
    expect(mirroredSource("https://host/model.gguf", manifest)).toBe("https://host/model.gguf");
  });

  it("rewrites the sources of a model entry the mirror holds, and leaves the others as written", () => {
    const entry: ModelEntry = {
      name: "qwen",
      origin: "hf://Qwen/Qwen2.5-7B-Instruct",
      profiles: [
        { name: "gpu", engine: "vllm", source: "hf://Qwen/Qwen2.5-7B-Instruct", gpus: 1 },
        { name: "cpu", engine: "llamacpp", source: "hf://Qwen/Qwen2.5-7B-Instruct-GGUF/q4.gguf" },
        { name: "other", engine: "llamacpp", source: "hf://Qwen/Other-GGUF/x.gguf" },
      ],
      adapters: [{ name: "sql", source: "hf://Org/Adapter" }],
    };
    const rewritten = entryFromMirror(entry, manifest);
    expect(rewritten.origin).toBe("mirror:hf/Qwen/Qwen2.5-7B-Instruct/main/");
    expect(rewritten.profiles?.map((profile) => profile.source)).toEqual([
      "mirror:hf/Qwen/Qwen2.5-7B-Instruct/main/",
      "mirror:hf/Qwen/Qwen2.5-7B-Instruct-GGUF/main/q4.gguf",
      "hf://Qwen/Other-GGUF/x.gguf",
    ]);
    expect(rewritten.adapters).toEqual([{ name: "sql", source: "hf://Org/Adapter" }]);
    expect(entryFromMirror(entry, undefined)).toBe(entry);
  });

  it.each([
    ["not json", "is not JSON"],
    [JSON.stringify({ format: 2, sources: {} }), "is not a mirror manifest: format:"],
    [JSON.stringify({ format: 1, sources: { x: { mirror_source: "/srv/x", commit: "c", pulled_at: "t", files: [] } } }), "is not a mirror manifest: sources.x.mirror_source:"],
    [JSON.stringify({ format: 1, sources: { x: { mirror_source: "mirror:x", commit: "c", pulled_at: "t", files: [{ path: "x", bytes: 1, sha256: "short" }] } } }), "is not a mirror manifest: sources.x.files.0.sha256: a sha256, 64 lowercase hex digits"],
  ])("refuses a manifest that is not one (%s), naming the file", (text, why) => {
    let thrown: unknown;
    try {
      parseMirrorManifest(text, "/srv/mirror/llmgw-mirror.json");
    } catch (error) {
      thrown = error;
    }
    expect(isDomainError(thrown) && thrown.code).toBe("mirror_manifest_invalid");
    expect((thrown as Error).message).toContain(`/srv/mirror/llmgw-mirror.json ${why}`);
  });

  describe("read from the mirror", () => {
    let folder: string;
    let http: HubServer;
    beforeAll(async () => {
      folder = path.join(tmpdir(), `llmgw-mirror-manifest-${process.pid}-${Date.now()}`);
      mkdirSync(path.join(folder, "with"), { recursive: true });
      mkdirSync(path.join(folder, "without"), { recursive: true });
      mkdirSync(path.join(folder, "broken"), { recursive: true });
      writeFileSync(path.join(folder, "with", "llmgw-mirror.json"), JSON.stringify(manifest));
      writeFileSync(path.join(folder, "broken", "llmgw-mirror.json"), "<html>error</html>");
      http = await startHubServer({ repositories: {}, mirrorRoot: folder });
    });
    afterAll(async () => {
      await http.close();
      rmSync(folder, { recursive: true, force: true });
    });

    it("reads it from a folder and from an HTTP mirror", async () => {
      expect(await readMirrorManifest(path.join(folder, "with"))).toEqual(manifest);
      expect(await readMirrorManifest(`${http.url}/mirror/with/`)).toEqual(manifest);
    });

    it("has none for a mirror written by hand, in a folder or over HTTP", async () => {
      expect(await readMirrorManifest(path.join(folder, "without"))).toBeUndefined();
      expect(await readMirrorManifest(`${http.url}/mirror/without`)).toBeUndefined();
    });

    it("refuses a manifest served as an error page rather than reading the hub instead", async () => {
      expect(await refusalOf(() => readMirrorManifest(`${http.url}/mirror/broken/`))).toEqual({ code: "mirror_manifest_invalid", message: `${http.url}/mirror/broken/llmgw-mirror.json is not JSON` });
    });

    it("refuses a mirror it cannot reach, naming it", async () => {
      const refused = await refusalOf(() => readMirrorManifest("http://127.0.0.1:9/models/", 2_000));
      expect(refused.code).toBe("source_unreadable");
      expect(refused.message).toMatch(/^cannot read the mirror's manifest http:\/\/127\.0\.0\.1:9\/models\/llmgw-mirror\.json: /);
    });
  });
});
