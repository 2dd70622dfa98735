import { inflateSync } from "node:zlib";
import { WebSocket } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { comfyuiDriver } from "../drivers/comfyui.js";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import { startSimEngine, type SimEngineHandle } from "./sim-engine.js";

const running: SimEngineHandle[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((sim) => sim.close()));
});

async function startComfy(environment: Record<string, string> = {}): Promise<SimEngineHandle> {
  const launch = comfyuiDriver.build(testLaunchInput({ port: 0, modelName: "sdxl-turbo" }));
  const sim = await startSimEngine({ engine: "comfyui", argv: launch.argv.slice(1), environment: { ...launch.env, ...environment }, log: () => undefined, exit: () => undefined });
  running.push(sim);
  return sim;
}

/** A text-to-image workflow in ComfyUI's API format, as "Save (API)" exports it. */
const textToImage = {
  "3": { class_type: "KSampler", inputs: { seed: 42, steps: 5, cfg: 1, sampler_name: "euler", scheduler: "normal", denoise: 1, model: ["4", 0], positive: ["6", 0], negative: ["7", 0], latent_image: ["5", 0] } },
  "4": { class_type: "CheckpointLoaderSimple", inputs: { ckpt_name: "sd_xl_turbo_1.0_fp16.safetensors" } },
  "5": { class_type: "EmptyLatentImage", inputs: { width: 64, height: 48, batch_size: 2 } },
  "6": { class_type: "CLIPTextEncode", inputs: { text: "a lighthouse at dusk", clip: ["4", 1] } },
  "7": { class_type: "CLIPTextEncode", inputs: { text: "", clip: ["4", 1] } },
  "8": { class_type: "VAEDecode", inputs: { samples: ["3", 0], vae: ["4", 2] } },
  "9": { class_type: "SaveImage", inputs: { filename_prefix: "llmgw", images: ["8", 0] } },
};

/** Collects a websocket client's messages until the prompt's `executing` with node null (ComfyUI's "done"). */
async function promptMessages(url: string, clientId: string, submit: () => Promise<string>): Promise<{ promptId: string; messages: { type: string; data: Record<string, unknown> }[] }> {
  const socket = new WebSocket(`${url.replace("http://", "ws://")}/ws?clientId=${clientId}`);
  const messages: { type: string; data: Record<string, unknown> }[] = [];
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve());
    socket.addEventListener("error", () => reject(new Error("websocket failed")));
  });
  let promptId = "";
  const done = new Promise<void>((resolve) => {
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as { type: string; data: Record<string, unknown> };
      messages.push(message);
      if (message.type === "executing" && message.data["node"] === null && message.data["prompt_id"] === promptId) resolve();
    });
  });
  promptId = await submit();
  await done;
  socket.close();
  return { promptId, messages };
}

function pngSize(bytes: Buffer): { width: number; height: number } {
  expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect(bytes.subarray(12, 16).toString("ascii")).toBe("IHDR");
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe("the simulated ComfyUI", () => {
  it("runs a text-to-image workflow: progress over the websocket, then PNGs of the latent's size from /history and /view", async () => {
    const sim = await startComfy();
    const { promptId, messages } = await promptMessages(sim.url, "client-1", async () => {
      const answer = await fetch(`${sim.url}/prompt`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: textToImage, client_id: "client-1" }) });
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as { prompt_id: string; node_errors: object };
      expect(body.node_errors).toEqual({});
      return body.prompt_id;
    });
    const progress = messages.filter((message) => message.type === "progress").map((message) => `${String(message.data["value"])}/${String(message.data["max"])}`);
    expect(progress).toEqual(["1/5", "2/5", "3/5", "4/5", "5/5"]);
    const history = (await (await fetch(`${sim.url}/history/${promptId}`)).json()) as Record<string, { outputs: Record<string, { images: { filename: string; subfolder: string; type: string }[] }>; status: { completed: boolean } }>;
    const entry = history[promptId];
    expect(entry?.status.completed).toBe(true);
    const images = entry?.outputs["9"]?.images ?? [];
    expect(images).toHaveLength(2);
    for (const image of images) {
      const view = await fetch(`${sim.url}/view?${new URLSearchParams({ filename: image.filename, subfolder: image.subfolder, type: image.type })}`);
      expect(view.headers.get("content-type")).toBe("image/png");
      const bytes = Buffer.from(await view.arrayBuffer());
      expect(pngSize(bytes)).toEqual({ width: 64, height: 48 });
      // The pixel rows inflate to exactly height × (1 filter byte + width × RGB).
      const idat = bytes.indexOf("IDAT");
      const length = bytes.readUInt32BE(idat - 4);
      expect(inflateSync(bytes.subarray(idat + 4, idat + 4 + length)).length).toBe(48 * (1 + 64 * 3));
    }
  });

  it("answers {} for a prompt still running, as ComfyUI does", async () => {
    const sim = await startComfy();
    const answer = (await (await fetch(`${sim.url}/prompt`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: { ...textToImage, "3": { ...textToImage["3"], inputs: { ...textToImage["3"].inputs, steps: 50 } } } }) })).json()) as { prompt_id: string };
    expect(await (await fetch(`${sim.url}/history/${answer.prompt_id}`)).json()).toEqual({});
  });

  it("turns an uploaded image into a GLB mesh through an image-to-3D workflow", async () => {
    const sim = await startComfy();
    const form = new FormData();
    form.append("image", new Blob([Buffer.from("not really a png, the simulation does not look")], { type: "image/png" }), "chair.png");
    const upload = (await (await fetch(`${sim.url}/upload/image`, { method: "POST", body: form })).json()) as { name: string; type: string };
    expect(upload).toMatchObject({ name: "chair.png", type: "input" });
    const workflow = {
      "1": { class_type: "LoadImage", inputs: { image: upload.name } },
      "2": { class_type: "Hy3DGenerateMesh", inputs: { image: ["1", 0], steps: 3 } },
      "3": { class_type: "Hy3DExportMesh", inputs: { trimesh: ["2", 0], filename_prefix: "chair" } },
    };
    const { promptId } = await promptMessages(sim.url, "client-3d", async () => {
      const answer = (await (await fetch(`${sim.url}/prompt`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: workflow, client_id: "client-3d" }) })).json()) as { prompt_id: string };
      return answer.prompt_id;
    });
    const history = (await (await fetch(`${sim.url}/history/${promptId}`)).json()) as Record<string, { outputs: Record<string, Record<string, { filename: string }[]>> }>;
    const mesh = history[promptId]?.outputs["3"]?.["3d"]?.[0];
    expect(mesh?.filename).toMatch(/^chair_\d+_\.glb$/);
    const bytes = Buffer.from(await (await fetch(`${sim.url}/view?filename=${mesh?.filename}&type=output`)).arrayBuffer());
    expect(bytes.subarray(0, 4).toString("ascii")).toBe("glTF");
    expect(bytes.readUInt32LE(8)).toBe(bytes.length);
    const jsonLength = bytes.readUInt32LE(12);
    const gltf = JSON.parse(bytes.subarray(20, 20 + jsonLength).toString("utf8")) as { asset: { version: string }; meshes: unknown[] };
    expect(gltf.asset.version).toBe("2.0");
    expect(gltf.meshes).toHaveLength(1);
  });

  it("refuses a workflow without an output node, and an image it was never given, as ComfyUI does", async () => {
    const sim = await startComfy();
    const post = (prompt: unknown) => fetch(`${sim.url}/prompt`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt }) });
    const noOutput = await post({ "1": { class_type: "CheckpointLoaderSimple", inputs: {} } });
    expect(noOutput.status).toBe(400);
    expect(await noOutput.json()).toMatchObject({ error: { type: "prompt_no_outputs" } });
    const missingImage = await post({ "1": { class_type: "LoadImage", inputs: { image: "never-uploaded.png" } }, "2": { class_type: "SaveImage", inputs: { images: ["1", 0] } } });
    expect(missingImage.status).toBe(400);
    expect(await missingImage.json()).toMatchObject({ node_errors: { "1": { class_type: "LoadImage" } } });
    expect((await post("not a workflow")).status).toBe(400);
  });

  it("answers 500 to prompts while told to fail", async () => {
    const sim = await startComfy({ LLMGW_SIM_FAULT: "error-500" });
    const answer = await fetch(`${sim.url}/prompt`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: textToImage }) });
    expect(answer.status).toBe(500);
  });
});
