import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shippedPresets } from "../../catalog/presets/shipped-presets.js";
import { qwen25_7bConfig } from "../../demo/demo-configs.js";
import { isDomainError } from "../../errors/domain-error.js";
import { startHubServer, type HubServer } from "../../hub/local-hub.js";
import { architectureFromConfig } from "../../plan/architecture.js";
import { checkpointTensors, syntheticGgufParts, writeBytes, writeSyntheticCheckpoint } from "../../plan/header-only-checkpoint.js";
import { entryFromMirror, readMirrorManifest } from "../../plan/mirror-manifest.js";
import { readModelSource } from "../../plan/read-model-source.js";
import { presetSources, pullToMirror } from "./mirror-pull.js";

/**
 * A preset with a GPU profile (a whole safetensors repository) and a CPU
 * profile (a GGUF published in two parts) pulled from a stand-in hub, then
 * read back by the planner from the mirror alone, with the hub stopped.
 */
describe("ctl mirror pull of a repository and a GGUF in parts", () => {
  let directory: string;
  let hub: HubServer;
  let mirror: string;
  const preset = shippedPresets().find((candidate) => candidate.name === "qwen2.5-7b-instruct");
  if (!preset) throw new Error("the qwen2.5-7b-instruct preset is not shipped");

  beforeAll(async () => {
    directory = mkdtempSync(path.join(tmpdir(), "llmgw-mirror-pull-"));
    const repository = path.join(directory, "hub", "Qwen", "Qwen2.5-7B-Instruct");
    const architecture = architectureFromConfig(qwen25_7bConfig, "config.json");
    await writeSyntheticCheckpoint(repository, qwen25_7bConfig, checkpointTensors(architecture), 4);
    writeFileSync(path.join(repository, "tokenizer.json"), "{}");
    // Beside safetensors, the agents fetch none of these: nor does the pull.
    writeFileSync(path.join(repository, "pytorch_model.bin"), "legacy weights");
    writeFileSync(path.join(repository, ".gitattributes"), "*.safetensors filter=lfs");
    const gguf = path.join(directory, "hub", "Qwen", "Qwen2.5-7B-Instruct-GGUF");
    const parts = syntheticGgufParts(architecture, "Q4_K_M", 15, 2);
    for (const [index, bytes] of parts.entries()) await writeBytes(path.join(gguf, `qwen2.5-7b-instruct-q4_k_m-0000${index + 1}-of-00002.gguf`), bytes);
    writeFileSync(path.join(gguf, "qwen2.5-7b-instruct-q8_0.gguf"), "another quantisation, not asked for");
    hub = await startHubServer({ repositories: { "Qwen/Qwen2.5-7B-Instruct": repository, "Qwen/Qwen2.5-7B-Instruct-GGUF": gguf } });
    mirror = path.join(directory, "mirror");
  });

  afterAll(async () => {
    await hub.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("copies every file each profile loads, and no other, with its sum beside it", async () => {
    const lines: string[] = [];
    const manifest = await pullToMirror(presetSources(preset), { to: mirror, hubEndpoint: hub.url, progress: (line) => lines.push(line) });
    const folder = "hf/Qwen/Qwen2.5-7B-Instruct/main";
    const files = manifest.sources["hf://Qwen/Qwen2.5-7B-Instruct@main"]?.files.map((file) => file.path).sort();
    expect(files).toEqual(
      ["config.json", "model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors", "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors", "model.safetensors.index.json", "tokenizer.json"].map((file) => `${folder}/${file}`),
    );
    const parts = manifest.sources["hf://Qwen/Qwen2.5-7B-Instruct-GGUF@main/qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf"];
    expect(parts?.mirror_source).toBe("mirror:hf/Qwen/Qwen2.5-7B-Instruct-GGUF/main/qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf");
    expect(parts?.files.map((file) => path.basename(file.path))).toEqual(["qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf", "qwen2.5-7b-instruct-q4_k_m-00002-of-00002.gguf"]);
    expect(existsSync(path.join(mirror, folder, "pytorch_model.bin"))).toBe(false);
    expect(existsSync(path.join(mirror, "hf/Qwen/Qwen2.5-7B-Instruct-GGUF/main/qwen2.5-7b-instruct-q8_0.gguf"))).toBe(false);
    for (const file of [...(manifest.sources["hf://Qwen/Qwen2.5-7B-Instruct@main"]?.files ?? []), ...(parts?.files ?? [])]) {
      const sum = createHash("sha256").update(readFileSync(path.join(mirror, file.path))).digest("hex");
      expect(file.sha256).toBe(sum);
      expect(readFileSync(path.join(mirror, `${file.path}.sha256`), "utf8")).toBe(`${sum}  ${path.basename(file.path)}\n`);
    }
    expect(lines).toHaveLength(9);
  });

  it("lets the planner read both profiles from the mirror alone, as a server with mirror: does", async () => {
    await hub.close();
    const manifest = await readMirrorManifest(mirror);
    const entry = entryFromMirror(preset.model, manifest);
    const [gpu, cpu] = entry.profiles ?? [];
    const options = { mirror, hubEndpoint: "http://127.0.0.1:9" };
    const fromFolder = await readModelSource(gpu?.source as string, options);
    expect(fromFolder.checkpoint.format).toBe("safetensors");
    expect(fromFolder.provenance.parameters).toContain("headers of 4 shards");
    const fromParts = await readModelSource(cpu?.source as string, options);
    expect(fromParts.provenance.parameters).toContain("all 2 parts");
    expect(fromParts.parameters).toBe(fromFolder.parameters);
  });

  it("refuses a profile name the preset does not have, before fetching anything", () => {
    let thrown: unknown;
    try {
      presetSources(preset, ["h100"]);
    } catch (error) {
      thrown = error;
    }
    expect(isDomainError(thrown) && thrown.message).toBe("preset qwen2.5-7b-instruct has no profile h100; its profiles are: gpu, cpu");
    expect(presetSources(preset, ["cpu"])).toEqual(["hf://Qwen/Qwen2.5-7B-Instruct-GGUF/qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf"]);
  });
});

describe("ctl mirror pull from a hub that serves another file than it lists", () => {
  let directory: string;
  let server: Server;
  let url: string;
  const served = Buffer.from("GGUF but cut short");

  beforeAll(async () => {
    directory = mkdtempSync(path.join(tmpdir(), "llmgw-mirror-pull-bad-"));
    // Lists each file as the hub does (its LFS size and sum), then serves other bytes.
    server = createServer((request, response) => {
      const reply = (body: unknown) => response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (request.url?.startsWith("/api/models/Org/Model/revision/")) reply({ id: "Org/Model", sha: "a".repeat(40) });
      else if (request.url?.startsWith("/api/models/Org/Model/tree/")) {
        reply([
          { type: "file", path: "longer.gguf", size: served.length + 100, oid: "1".repeat(40), lfs: { oid: "2".repeat(64), size: served.length + 100 } },
          { type: "file", path: "other.gguf", size: served.length, oid: "3".repeat(40), lfs: { oid: "4".repeat(64), size: served.length } },
        ]);
      } else if (request.url?.includes("/resolve/")) response.writeHead(200, { "content-length": served.length }).end(served);
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(directory, { recursive: true, force: true });
  });

  it.each([
    ["longer.gguf", `${served.length} bytes where the hub lists ${served.length + 100}`],
    ["other.gguf", `sha256 ${createHash("sha256").update(served).digest("hex")} where the hub lists ${"4".repeat(64)}`],
  ])("refuses %s, keeps no file of it, and writes no manifest", async (file, why) => {
    let thrown: unknown;
    try {
      await pullToMirror([`hf://Org/Model/${file}`], { to: directory, hubEndpoint: url });
    } catch (error) {
      thrown = error;
    }
    expect(isDomainError(thrown) && thrown.code).toBe("checksum_mismatch");
    expect((thrown as Error).message).toBe(`${url}/Org/Model/resolve/${"a".repeat(40)}/${file} arrived as ${why}; the file was not kept`);
    const target = path.join(directory, "hf/Org/Model/main", file);
    expect(existsSync(target)).toBe(false);
    expect(existsSync(`${target}.partial`)).toBe(false);
    expect(existsSync(path.join(directory, "llmgw-mirror.json"))).toBe(false);
  });
});
