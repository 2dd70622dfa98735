import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";
import { imageToMeshLine } from "./image-to-mesh-line.js";

/**
 * The printed line pasted into a shell, against a stand-in endpoint that
 * answers with what curl uploaded (its path, file name and bytes), so the test
 * sees what the gateway would have received.
 */
describe("imageToMeshLine, pasted into a shell", () => {
  let server: Server;
  let url: string;

  beforeAll(async () => {
    server = createServer((incoming, answer) => {
      const chunks: Buffer[] = [];
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
      incoming.on("end", () => {
        const upload = new Request(`http://stand-in${incoming.url ?? "/"}`, { method: "POST", headers: { "content-type": incoming.headers["content-type"] ?? "" }, body: Buffer.concat(chunks) });
        void upload.formData().then(async (form) => {
          const image = form.get("image");
          const bytes = image instanceof File ? Buffer.from(await image.arrayBuffer()) : Buffer.alloc(0);
          answer.end(JSON.stringify({ path: incoming.url, filename: image instanceof File ? image.name : null, bytes: bytes.toString("base64") }));
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  // A temp folder, a --data-dir with a space (macOS's "Application Support"), and one with every character curl or the shell reads specially.
  it.each(["plain", "Application Support", `semi;colon,comma "double" 'single' back\\slash $HOME`])("uploads the image and writes the answer in a folder named %s, pasted in another folder", async (name) => {
    const folder = path.join(temporaryDirectory("llmgw-mesh-line-"), name);
    mkdirSync(folder);
    const image = path.join(folder, "chair.png");
    const bytes = Buffer.from("pretend image bytes: the stand-in does not look");
    writeFileSync(image, bytes);
    const output = path.join(folder, "chair.glb");
    const line = imageToMeshLine(url, "hunyuan3d-2", image, output);

    await promisify(execFile)("sh", ["-c", line], { cwd: temporaryDirectory("llmgw-mesh-line-cwd-"), timeout: 30_000 });

    const received = JSON.parse(readFileSync(output, "utf8")) as { path: string; filename: string; bytes: string };
    expect(received).toEqual({ path: "/v1/llmgw/comfy/hunyuan3d-2", filename: "chair.png", bytes: bytes.toString("base64") });
  });

  it("reads as typed when nothing needs quoting", () => {
    expect(imageToMeshLine("http://127.0.0.1:8080", "hunyuan3d-2", "/tmp/llmgw-demo-x/chair.png", "/tmp/llmgw-demo-x/chair.glb")).toBe(
      "curl -s -F image=@/tmp/llmgw-demo-x/chair.png http://127.0.0.1:8080/v1/llmgw/comfy/hunyuan3d-2 -o /tmp/llmgw-demo-x/chair.glb",
    );
  });
});
