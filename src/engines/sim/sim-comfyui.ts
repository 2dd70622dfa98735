import { randomUUID } from "node:crypto";
import websocket from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { ConcurrencyGate } from "../openai-server/concurrency-gate.js";
import { simulatedGlb, simulatedPng } from "./sim-images.js";

/**
 * ComfyUI's HTTP and websocket API as the gateway uses it
 * (https://github.com/comfyanonymous/ComfyUI, server.py):
 *   POST /prompt {prompt, client_id}     → {prompt_id, number, node_errors}
 *   GET  /history/{prompt_id}            → {} while queued or running, then {id: {prompt, outputs, status}}
 *   GET  /view?filename=&subfolder=&type= → the file
 *   POST /upload/image (multipart "image") → {name, subfolder, type: "input"}
 *   GET  /ws?clientId=                    → status, execution_start, progress, executing (node null = done)
 * A workflow runs one at a time, step by step, and its outputs are real
 * files: a PNG per image of its latent's size, a GLB for a mesh node.
 */

/** How long one sampler step takes; 20 steps ≈ 0.2 s, so tests see progress without waiting. */
const stepMilliseconds = 10;

const workflowSchema = z.record(
  z.string(),
  z.looseObject({ class_type: z.string().min(1), inputs: z.record(z.string(), z.unknown()).default({}) }),
);
const promptRequestSchema = z.looseObject({ prompt: workflowSchema, client_id: z.string().optional() });
type Workflow = z.infer<typeof workflowSchema>;

interface OutputFile {
  readonly filename: string;
  readonly subfolder: string;
  readonly type: "output" | "input";
}

interface HistoryEntry {
  readonly number: number;
  readonly workflow: Workflow;
  readonly clientId: string | undefined;
  readonly outputs: Record<string, Record<string, OutputFile[]>>;
  readonly status: { status_str: "success" | "error"; completed: boolean; messages: unknown[] };
}

/** The socket methods used here (ws's WebSocket). */
interface ClientSocket {
  readonly readyState: number;
  send(data: string): void;
  on(event: "close", listener: () => void): void;
}

const imageOutputNode = /^(SaveImage|PreviewImage)$/;
const meshOutputNode = /(SaveGLB|Save3D|ExportMesh|SaveMesh)/i;

function numberInput(workflow: Workflow, classPattern: RegExp, input: string, fallback: number): number {
  for (const node of Object.values(workflow)) {
    const value = node.inputs[input];
    if (classPattern.test(node.class_type) && typeof value === "number" && Number.isFinite(value)) return value;
  }
  return fallback;
}

function textSeed(workflow: Workflow): number {
  let seed = numberInput(workflow, /^KSampler/, "seed", 0);
  for (const node of Object.values(workflow)) {
    const text = node.inputs["text"];
    if (typeof text === "string") for (const character of text) seed = (seed * 31 + character.charCodeAt(0)) >>> 0;
  }
  return seed;
}

function comfyError(type: string, message: string, nodeErrors: Record<string, unknown> = {}) {
  return { error: { type, message, details: "", extra_info: {} }, node_errors: nodeErrors };
}

export interface SimComfyContext {
  readonly gate: ConcurrencyGate;
  readonly log: (line: string) => void;
  /** True while an error-500 fault is set: prompts are refused as ComfyUI refuses a broken server. */
  readonly failing: () => boolean;
  /** True while an execution-error fault is set: prompts run, then a node raises, as an out-of-memory sampler does. */
  readonly executionFails: () => boolean;
}

export async function registerSimComfyRoutes(server: FastifyInstance, context: SimComfyContext): Promise<void> {
  const history = new Map<string, HistoryEntry>();
  const files = new Map<string, { bytes: Buffer; contentType: string }>();
  const sockets = new Map<string, Set<ClientSocket>>();
  let number = 0;

  const send = (clientId: string | undefined, message: unknown) => {
    const targets = clientId === undefined ? [...sockets.values()].flatMap((set) => [...set]) : [...(sockets.get(clientId) ?? [])];
    // 1 is ws's OPEN: a socket closing meanwhile is skipped, not an error.
    for (const socket of targets) if (socket.readyState === 1) socket.send(JSON.stringify(message));
  };
  const queueStatus = () => ({ type: "status", data: { status: { exec_info: { queue_remaining: context.gate.running + context.gate.waiting } } } });

  const run = async (promptId: string, workflow: Workflow, clientId: string | undefined, position: number) => {
    const release = await context.gate.acquire();
    try {
      send(clientId, { type: "execution_start", data: { prompt_id: promptId, timestamp: Date.now() } });
      const steps = Math.max(1, Math.min(200, Math.round(numberInput(workflow, /^KSampler/, "steps", 20))));
      const sampler = Object.entries(workflow).find(([, node]) => /^KSampler/.test(node.class_type))?.[0] ?? null;
      for (let step = 1; step <= steps; step += 1) {
        await new Promise((resolve) => setTimeout(resolve, stepMilliseconds));
        send(clientId, { type: "progress", data: { value: step, max: steps, prompt_id: promptId, node: sampler } });
      }
      if (context.executionFails()) {
        // ComfyUI's execution.py reports a node that raised this way, on the socket and in the history.
        const failure = {
          prompt_id: promptId,
          node_id: sampler ?? Object.keys(workflow)[0] ?? "",
          node_type: (sampler !== null ? workflow[sampler]?.class_type : undefined) ?? "unknown",
          executed: [],
          exception_message: "Allocation on device 0 would exceed allowed memory. (out of memory) (simulated: fault execution-error)",
          exception_type: "torch.OutOfMemoryError",
          traceback: [],
          current_inputs: {},
          current_outputs: {},
        };
        history.set(promptId, { number: position, workflow, clientId, outputs: {}, status: { status_str: "error", completed: false, messages: [["execution_error", failure]] } });
        send(clientId, { type: "execution_error", data: failure });
        context.log(`POST /prompt prompt_id=${promptId} failed (fault execution-error)`);
        return;
      }
      const width = Math.max(8, Math.min(2048, Math.round(numberInput(workflow, /EmptyLatentImage|EmptySD3LatentImage/, "width", 512))));
      const height = Math.max(8, Math.min(2048, Math.round(numberInput(workflow, /EmptyLatentImage|EmptySD3LatentImage/, "height", 512))));
      const batch = Math.max(1, Math.min(8, Math.round(numberInput(workflow, /EmptyLatentImage|EmptySD3LatentImage/, "batch_size", 1))));
      const seed = textSeed(workflow);
      const outputs: Record<string, Record<string, OutputFile[]>> = {};
      for (const [nodeId, node] of Object.entries(workflow)) {
        const prefix = typeof node.inputs["filename_prefix"] === "string" ? String(node.inputs["filename_prefix"]).replace(/[^A-Za-z0-9_-]/g, "_") : "ComfyUI";
        if (imageOutputNode.test(node.class_type)) {
          outputs[nodeId] = {
            images: Array.from({ length: batch }, (_, index) => {
              const filename = `${prefix}_${String(position).padStart(5, "0")}_${index}_.png`;
              files.set(filename, { bytes: simulatedPng(width, height, seed + index), contentType: "image/png" });
              return { filename, subfolder: "", type: "output" as const };
            }),
          };
        } else if (meshOutputNode.test(node.class_type)) {
          const filename = `${prefix}_${String(position).padStart(5, "0")}_.glb`;
          files.set(filename, { bytes: simulatedGlb(), contentType: "model/gltf-binary" });
          outputs[nodeId] = { "3d": [{ filename, subfolder: "", type: "output" }] };
        }
        if (outputs[nodeId]) send(clientId, { type: "executed", data: { node: nodeId, output: outputs[nodeId], prompt_id: promptId } });
      }
      history.set(promptId, { number: position, workflow, clientId, outputs, status: { status_str: "success", completed: true, messages: [] } });
      send(clientId, { type: "executing", data: { node: null, prompt_id: promptId } });
      send(clientId, { type: "execution_success", data: { prompt_id: promptId, timestamp: Date.now() } });
      context.log(`POST /prompt prompt_id=${promptId} steps=${steps} outputs=${Object.keys(outputs).length} size=${width}x${height}x${batch}`);
    } finally {
      release();
      send(undefined, queueStatus());
    }
  };

  await server.register(websocket);
  server.get("/ws", { websocket: true }, (socket: ClientSocket, request) => {
    const query = request.query as Record<string, unknown>;
    const clientId = typeof query["clientId"] === "string" && query["clientId"] !== "" ? query["clientId"] : randomUUID().replace(/-/g, "");
    const set = sockets.get(clientId) ?? new Set<ClientSocket>();
    set.add(socket);
    sockets.set(clientId, set);
    socket.on("close", () => {
      set.delete(socket);
      if (set.size === 0) sockets.delete(clientId);
    });
    socket.send(JSON.stringify({ type: "status", data: { ...queueStatus().data, sid: clientId } }));
  });

  server.post("/prompt", async (request, reply) => {
    if (context.failing()) return reply.status(500).send(comfyError("server_error", "simulated failure (fault error-500)"));
    const body = promptRequestSchema.safeParse(request.body);
    if (!body.success) return reply.status(400).send(comfyError("invalid_prompt", `Cannot execute because the prompt is not a workflow in API format: ${body.error.issues[0]?.message ?? "invalid"}`));
    const workflow = body.data.prompt;
    const hasOutput = Object.values(workflow).some((node) => imageOutputNode.test(node.class_type) || meshOutputNode.test(node.class_type));
    if (!hasOutput) return reply.status(400).send(comfyError("prompt_no_outputs", "Prompt has no outputs"));
    const nodeErrors: Record<string, unknown> = {};
    for (const [nodeId, node] of Object.entries(workflow)) {
      const image = node.inputs["image"];
      if (node.class_type === "LoadImage" && (typeof image !== "string" || !files.has(`input/${image}`))) {
        nodeErrors[nodeId] = { errors: [{ type: "custom_validation_failed", message: `Invalid image file: ${String(image)}`, details: "" }], class_type: "LoadImage" };
      }
    }
    if (Object.keys(nodeErrors).length > 0) return reply.status(400).send(comfyError("prompt_outputs_failed_validation", "Prompt outputs failed validation", nodeErrors));
    const promptId = randomUUID();
    number += 1;
    void run(promptId, workflow, body.data.client_id, number);
    return reply.send({ prompt_id: promptId, number, node_errors: {} });
  });

  server.get("/history/:promptId", async (request, reply) => {
    const { promptId } = request.params as { promptId: string };
    const entry = history.get(promptId);
    if (!entry) return reply.send({});
    return reply.send({
      [promptId]: { prompt: [entry.number, promptId, entry.workflow, { client_id: entry.clientId }, Object.keys(entry.outputs)], outputs: entry.outputs, status: entry.status, meta: {} },
    });
  });

  server.get("/view", async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const filename = typeof query["filename"] === "string" ? query["filename"] : "";
    const key = query["type"] === "input" ? `input/${filename}` : filename;
    const file = files.get(key);
    if (!file) return reply.status(404).send("404: Not Found");
    return reply.type(file.contentType).send(file.bytes);
  });

  // Multipart bodies are read whole and parsed by the platform's own FormData reader.
  server.addContentTypeParser(/^multipart\/form-data/, { parseAs: "buffer", bodyLimit: 32 * 1024 * 1024 }, (_request, body, done) => done(null, body));
  server.post("/upload/image", async (request, reply) => {
    let form: FormData;
    try {
      form = await new Response(request.body as Buffer, { headers: { "content-type": String(request.headers["content-type"]) } }).formData();
    } catch {
      return reply.status(400).send("400: Bad Request: not a multipart form");
    }
    const image = form.get("image");
    if (!(image instanceof Blob)) return reply.status(400).send("400: Bad Request: no image field");
    const name = (image instanceof File && image.name !== "" ? image.name : `upload-${randomUUID()}.png`).replace(/[^A-Za-z0-9._-]/g, "_");
    files.set(`input/${name}`, { bytes: Buffer.from(await image.arrayBuffer()), contentType: image.type || "application/octet-stream" });
    return reply.send({ name, subfolder: "", type: "input" });
  });
}
