import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DomainError } from "../errors/domain-error.js";
import type { ModelEntry } from "../catalog/schema.js";
import { checkEntrySources } from "./check-sources.js";
import { readFileSize } from "./read-file-size.js";

let server: Server;
let base: string;
let workspace: string;

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "llmgw-file-size-"));
  writeFileSync(join(workspace, "vae.safetensors"), Buffer.alloc(1234));
  server = createServer((request, response) => {
    const url = request.url ?? "/";
    if (url === "/files/model.safetensors") {
      response.writeHead(200, { "content-length": "5000" });
      response.end(request.method === "HEAD" ? undefined : Buffer.alloc(5000));
    } else if (url === "/Comfy-Org/flux1-schnell/resolve/main/flux1-schnell-fp8.safetensors") {
      // The hub answers a file in LFS with a redirect to its CDN, and the size in x-linked-size.
      response.writeHead(302, { location: "https://cdn.example/blob", "x-linked-size": "17246524772" });
      response.end();
    } else {
      response.writeHead(404);
      response.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(workspace, { recursive: true, force: true });
});

describe("the size of one ComfyUI file", () => {
  it("reads it from Content-Length, from the hub's x-linked-size, and from a local file", async () => {
    expect(await readFileSize(`${base}/files/model.safetensors`)).toBe(5000);
    expect(await readFileSize("hf://Comfy-Org/flux1-schnell@main/flux1-schnell-fp8.safetensors", { hubEndpoint: base })).toBe(17_246_524_772);
    expect(await readFileSize(join(workspace, "vae.safetensors"))).toBe(1234);
  });

  it("refuses a missing file, a folder and a whole repository, naming the source", async () => {
    await expect(readFileSize(`${base}/files/missing.safetensors`)).rejects.toThrow(/missing.safetensors: 404: no such file/);
    await expect(readFileSize(`${base}/files/`)).rejects.toThrow(/is a folder/);
    await expect(readFileSize("hf://Comfy-Org/flux1-schnell@main", { hubEndpoint: base })).rejects.toThrow(/names a repository or a folder/);
  });

  it("is what the source check asks of a ComfyUI profile, every file named by its place", async () => {
    const workflow = { "9": { class_type: "SaveImage", inputs: { images: ["8", 0] } }, "8": { class_type: "VAEDecode", inputs: {} }, "6": { class_type: "CLIPTextEncode", inputs: { text: "" } } };
    const entry = (files: string[]): ModelEntry => ({
      name: "flux",
      profiles: [{ engine: "comfyui", source: "hf://black-forest-labs/FLUX.1-schnell@main", comfy: { workflow, outputs: "images", inputs: { prompt: "6.inputs.text" }, files: files.map((file) => ({ source: `${base}/files/${file}`, to: "checkpoints/" })) } }],
    });
    const refused = await checkEntrySources(entry(["model.safetensors", "gone.safetensors"]), {}).then(
      () => undefined,
      (error: unknown) => error as DomainError,
    );
    expect(refused?.message).toBe("flux: a source does not answer as a model: flux.profiles[0].comfy.files[1].source");
    expect(refused?.details).toEqual([{ where: "flux.profiles[0].comfy.files[1].source", message: expect.stringMatching(/gone\.safetensors.*404/) }]);
    const checked = await checkEntrySources(entry(["model.safetensors"]), {});
    expect(checked.map((check) => [check.where, check.bytes])).toEqual([["profiles[0].comfy.files[0].source", 5000]]);
  });
});
